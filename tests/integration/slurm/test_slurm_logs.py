"""``logs JOB`` and the progress of ``submit --wait`` on the real two-node cluster."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from engine_fixtures import assert_no_leak
from slurm_helpers import job_containers, job_dir, runner, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

TICKS = 'for i in 1 2 3; do echo "tick $i from $NODE_RANK"; sleep 1; done; echo "hf=$HF_TOKEN"'


def test_logs_follows_every_node_rank_by_rank_masked(project, docker_client, canary, tmp_path):
    work, env = project
    sub = runner(work, env, "--json", "submit", "--gpu", "none", "--", "sh", "-c", TICKS + "; sleep 3")
    assert sub.returncode == 0, sub.stderr
    job_id = json.loads(sub.stdout)["job_id"]
    # From another directory: the file is found through Slurm's StdOut of the job.
    followed = subprocess.run([sys.executable, "-m", "runner", "logs", job_id, "-f"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
    assert followed.returncode == 0, followed.stderr
    lines = followed.stdout.splitlines()
    for rank in (0, 1):
        assert [line for line in lines if line.startswith(f"[{rank}] tick")] == [f"[{rank}] tick {i} from {rank}" for i in (1, 2, 3)], lines
        assert f"[{rank}] hf=***" in lines
    # -f returned because the job ended.
    state = json.loads(runner(work, env, "--json", "status", job_id).stdout)
    assert state["state"] == "completed"

    only = runner(work, env, "logs", job_id, "--node", "1")
    assert only.stdout.splitlines() == [f"[1] tick {i} from 1" for i in (1, 2, 3)] + ["[1] hf=***"], only.stdout
    assert runner(work, env, "logs", job_id, "--node", "n1", "--tail", "1").stdout.splitlines() == ["[0] hf=***"]
    docs = [json.loads(line) for line in runner(work, env, "--json", "logs", job_id, "--tail", "2").stdout.splitlines()]
    assert sorted((d["rank"], d["node"], d["line"]) for d in docs) == [(0, "n1", "hf=***"), (1, "n2", "hf=***")]
    bad = runner(work, env, "logs", job_id, "--node", "n9")
    assert bad.returncode == 2 and "n9" in bad.stderr

    # logs masks on its own: a value that reached the file unmasked (a node without the
    # runner's masker) is masked with the reading host's secrets.
    out_file = next(job_dir(work).glob(f"slurm-{job_id}.out"))
    mode = out_file.stat().st_mode
    with open(out_file, "a") as fh:
        fh.write(f"1: leaked {canary['HF_TOKEN']}\n")
    shown = runner(work, env, "logs", job_id, "--tail", "1")
    assert shown.stdout.splitlines() == ["[1] leaked ***"]
    assert_no_leak(shown.stdout + shown.stderr, canary, "logs")
    assert stat.S_IMODE(out_file.stat().st_mode) == stat.S_IMODE(mode)


def test_logs_of_a_name_is_still_the_docker_command(project):
    work, env = project
    result = runner(work, env, "logs", "primus-no-such-container-1234")
    assert result.returncode != 0 and "Slurm" not in result.stderr and "job" not in result.stderr.lower()


def test_submit_wait_reports_each_change_once_and_polls_with_back_off(project, tmp_path):
    """Under CI (not a terminal): one line per state change. scontrol is wrapped to count the queries."""
    work, env = project
    real = subprocess.run(["which", "scontrol"], capture_output=True, text=True).stdout.strip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "scontrol").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real} "$@"\n')
    (bin_dir / "scontrol").chmod(0o755)
    env = {**env, "PATH": f"{bin_dir}:{env['PATH']}", "CI": "true"}
    done = runner(work, env, "submit", "--gpu", "none", "--wait", "--", "sleep", "14")
    assert done.returncode == 0, done.stderr
    job_id = next(job_dir(work).glob("slurm-*.out")).name[len("slurm-"):-len(".out")]
    progress = [line for line in done.stderr.splitlines() if line.startswith(f"job {job_id}: ")]
    running = [line for line in progress if line.startswith(f"job {job_id}: RUNNING on n[1-2], for ")]
    assert len(running) == 1, progress
    assert progress[-1].startswith(f"job {job_id}: COMPLETED (exit 0), after "), progress
    assert len(progress) == len(set(line.split(", ")[0] for line in progress)), "one line per change"
    polls = [line for line in calls.read_text().splitlines() if line.startswith("show job -o")]
    # Every second would be over 14 queries; back-off from 1.5 s (1.5, 3, 6, 12 …) makes about 5.
    assert len(polls) <= 10, polls
