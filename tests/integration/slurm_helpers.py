"""Helpers the Slurm integration tests share: run the CLI as slurmd's user sees it, find a job's containers, wait."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from runs_helpers import slurm_job_dirs
from runner.engines.slurm import script as slurm_script

NOT_LISTED = "notlisted-value-6c1f0e2a9b"


def runner(work: Path, env: dict, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runner", *args], cwd=work, env=env, capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)


def job_containers(docker_client, job_id: str, running_only: bool = False) -> list[dict]:
    # The low-level list: no per-container inspect that races with removal.
    found = docker_client.api.containers(all=True, filters={"label": f"{slurm_script.LABEL_SLURM_JOB}={job_id}"})
    return [c for c in found if c["State"] == "running"] if running_only else found


def wait_until(predicate, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def job_dir(work: Path) -> Path:
    """The project's one job directory: slurm.output_dir is unset, so the run's own, under HOME=work's state directory."""
    (only,) = slurm_job_dirs(work)
    return only


def job_id_from(proc_stdout: str) -> str:
    return proc_stdout.strip().splitlines()[0]
