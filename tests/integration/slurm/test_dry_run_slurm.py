"""Slurm dry runs submit and cancel nothing, however they are asked for, and show the request:
the `sbatch` argument list, the batch script and each node's container command.

"Nothing submitted" is read from Slurm itself (`squeue --name`, the job's own name is unique)
and from recording `sbatch`/`srun`/`scancel` stubs first on PATH (a call would leave a record).
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from docker_helpers import CONFIG, Workspace, unique
from engine_fixtures import assert_no_leak

SECTIONS = ("main", "container", "slurm", "direct")


def _with_section(section: str) -> str:
    if section == "container":
        return CONFIG.replace("container:\n", "container:\n  dry_run: true\n", 1)
    return CONFIG + f"{section}:\n  dry_run: true\n"


def _stubs(ws: Workspace):
    """sbatch, srun and scancel that only record their arguments; the record file, absent until called."""
    bin_dir, record = ws.root / "stub-bin", ws.root / "slurm-calls"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("sbatch", "srun", "scancel"):
        path = bin_dir / tool
        path.write_text(f"#!/bin/sh\necho \"{tool} $*\" >> {record}\nexit 1\n")
        path.chmod(0o755)
    ws.env["PATH"] = f"{bin_dir}:{ws.env['PATH']}"
    return record


def _queued(name: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", "--name", name, "-o", "%i"], capture_output=True, text=True, check=True, timeout=30)
    return out.stdout.split()


@pytest.mark.parametrize("how", ["own", "global"] + [f"config-{s}" for s in SECTIONS])
@pytest.mark.parametrize("launcher", ["srun", "sbatch"])
def test_slurm_mode_dry_run_submits_nothing_and_shows_the_request(tmp_path, canary, slurm_cluster, busybox_image, how, launcher):
    config = _with_section(how.split("-", 1)[1]) if how.startswith("config-") else CONFIG
    ws = Workspace(tmp_path, canary, config)
    record = _stubs(ws)
    name = unique("dryrun-slurm")
    head = {"own": ["slurm", "--dry-run", launcher], "global": ["--dry-run", "slurm", launcher]}.get(how, ["slurm", launcher])
    result = ws.run(*head, "-N", "2", "-p", slurm_cluster.partition, "--", "container", "--name", name, "--",
                    "train", "pretrain", "--config", "exp.yaml")
    text = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0, text
    sbatch = next(line for line in text.splitlines() if line.startswith("sbatch "))
    assert sbatch.startswith("sbatch --parsable --export=") and f" -N 2 -p {slurm_cluster.partition} " in sbatch  # the user's flags as given
    assert "#SBATCH --nodes=2" in text
    assert f"#SBATCH --job-name={name}" in text
    assert "primus-test/busybox:latest" in text and "primus-cli direct -- train pretrain --config exp.yaml" in text  # each node's container
    assert_no_leak(text, canary, "the Slurm dry run's output")
    assert not record.exists(), record.read_text()
    assert _queued(name) == []
    assert not (ws.cwd / "primus-runs").exists()


def test_submit_dry_run_json_carries_the_request(tmp_path, canary, slurm_cluster, busybox_image):
    ws = Workspace(tmp_path, canary)
    record = _stubs(ws)
    name = unique("dryrun-submit")
    result = ws.run("--json", "submit", "--dry-run", "--nodes", "2", "--name", name, "--", "python", "train.py")
    assert result.returncode == 0, result.stderr.decode()
    data = json.loads(result.stdout)
    assert {"image", "command", "env", "secrets", "skipped", "request"} <= set(data)
    request = data["request"]
    assert request["sbatch"][:2] == ["sbatch", "--parsable"] and request["sbatch"][-1] == request["script_path"]
    assert "#SBATCH --nodes=2" in request["script"] and request["nodes"] == 2
    assert request["node_command"][:2] == ["docker", "run"] and request["node_command"][-2:] == ["python", "train.py"]
    assert "PRIMUS_RUNNER_ENV_HF_TOKEN" in request["export"] and "HF_TOKEN" in request["node_command"]
    assert_no_leak(result.stdout + result.stderr, canary, "submit --dry-run --json")
    assert not record.exists() and _queued(name) == []


def test_the_stub_records_a_real_submission(tmp_path, canary, slurm_cluster, busybox_image):
    """The control: without a dry run the runner does call the stub (so no record above means no call)."""
    ws = Workspace(tmp_path, canary)
    record = _stubs(ws)
    result = ws.run("slurm", "sbatch", "-N", "1", "--", "container", "--", "train")
    assert result.returncode != 0  # the stub refuses
    assert record.read_text().startswith("sbatch --parsable --export=")


def test_cancel_dry_run_leaves_the_job_running(tmp_path, canary, slurm_cluster, busybox_image):
    ws = Workspace(tmp_path, canary)
    name = unique("dryrun-cancel")
    submitted = ws.run("submit", "--nodes", "1", "--name", name, "--", "sleep", "120")
    assert submitted.returncode == 0, submitted.stderr.decode()
    job = submitted.stdout.decode().split()[0]
    try:
        for args in (["cancel", "--dry-run", job], ["--dry-run", "cancel", job]):
            result = ws.run(*args)
            text = result.stdout.decode() + result.stderr.decode()
            assert result.returncode == 0, text
            assert f"would cancel job {job}" in text
        cancelled = Workspace(tmp_path / "other", canary, _with_section("slurm")).run("cancel", job)  # slurm.dry_run: true
        assert cancelled.returncode == 0 and b"would cancel" in cancelled.stdout + cancelled.stderr
        time.sleep(1)
        assert _queued(name) == [job], "a dry run cancelled the job"
    finally:
        subprocess.run(["scancel", job], capture_output=True)


@pytest.mark.parametrize("argv", [
    ["submit", "--gpu", "none", "--account", "{value}", "--", "true"],
    ["slurm", "sbatch", "-N", "1", "--comment={value}", "--", "container", "--", "train"],
])
def test_a_secret_value_never_reaches_sbatchs_command_line(tmp_path, canary, slurm_cluster, busybox_image, argv):
    """The sbatch argument list is world-readable (ps, /proc/PID/cmdline): a secret value in any flag
    (a submit flag, a passed-through Slurm flag) is refused before sbatch starts, named, never shown."""
    ws = Workspace(tmp_path, canary)
    record = _stubs(ws)
    value = canary["HF_TOKEN"]
    result = ws.run(*[a.replace("{value}", value) for a in argv])
    assert result.returncode == 2, result.stderr
    assert not record.exists(), record.read_text()
    assert value.encode() not in result.stdout + result.stderr
