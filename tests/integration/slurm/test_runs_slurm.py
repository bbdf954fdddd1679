"""Runs on the two-node Slurm cluster: tracker outputs from both nodes on the host, the node-local
job cache, and ``logs``/``runs`` for a finished Slurm job next to a finished attached and detached ``up``."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from docker_helpers import CONFIG, Workspace, force_remove, unique
from engine_fixtures import assert_no_leak
from runs_helpers import TB_WRITER, WANDB_JOB, host_path, is_event_file, runs_json, sync_path
from job_images import job_image  # noqa: F401  (a fixture: the python image with the W&B client)

pytestmark = [pytest.mark.slurm, pytest.mark.docker]


def _config(partition: str) -> str:
    return CONFIG + f"""slurm:
  partition: {partition}
  nodes: 2
  time: "5"
  gpus_per_node: 0
trackers:
  framework: generic
  disable_tensorboard: false
  tensorboard_dir: /tmp/tb
  disable_wandb: false
  wandb_project: runs-slurm
  wandb_save_dir: /tmp/wandb
cache:
  node_dir: {{node_cache}}
"""


def test_every_kind_of_run_is_listed_and_its_log_shown_from_another_directory(tmp_path, canary, slurm_cluster, job_image):
    node_cache = tmp_path / "node-cache-{uid}"
    ws = Workspace(tmp_path, canary, _config(slurm_cluster.partition).replace("{node_cache}", str(node_cache)))
    ws.env["XDG_STATE_HOME"] = str(tmp_path / "state")
    ws.without_host_trackers()
    ws.env["WANDB_MODE"] = "offline"
    ws.env["PATH"] = ws.env["PATH"]
    # Slurm: both ranks write TensorBoard events to /tmp/tb, rank 0 runs W&B offline to /tmp/wandb (neither mounted),
    # and each node finds its own cache.
    job = (f"python3 -c {shlex.quote(TB_WRITER)} /tmp/tb && echo cache=$TRITON_CACHE_DIR && touch $TRITON_CACHE_DIR/from-rank-$NODE_RANK"
           f" && if [ $NODE_RANK = 0 ]; then python3 -c {shlex.quote(WANDB_JOB)}; fi; echo hf=$HF_TOKEN; exit 0")
    slurm = ws.run("submit", "--image", job_image, "--wait", "--env", "WANDB_MODE", "--", "sh", "-c", job, timeout=600)
    err = slurm.stderr.decode()
    assert slurm.returncode == 0, err
    tb = host_path(err, "/tmp/tb")
    events = list(tb.glob("events.out.tfevents.*"))  # named .<seconds>.rank<N>: whichever rank wrote first sorts first
    assert sorted(e.name.rsplit("rank", 1)[1] for e in events) == ["0", "1"] and all(is_event_file(e) for e in events)
    synced = sync_path(err)
    run_id = slurm.stdout.decode().split("RUN ", 1)[1].split()[0]
    assert synced.is_dir() and synced.name.endswith(run_id)
    assert sorted(p.name for p in node_cache.parent.glob("node-cache-*/*/triton/from-rank-*")) == ["from-rank-0", "from-rank-1"]

    attached, detached = unique("runs-sl-att"), unique("runs-sl-det")
    one = ws.run("up", "--name", attached, "--", "sh", "-c", "echo attached; exit 3")
    two = ws.run("up", "-d", "--name", detached, "--", "sh", "-c", "echo detached; exit 4")
    assert one.returncode == 3 and two.returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def run(*args):
        return subprocess.run(ws.argv(*args), cwd=elsewhere, env=ws.env, capture_output=True, text=True, timeout=120)

    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            records = {r["name"]: r for r in runs_json(run)}
            if records[detached]["state"] != "running":
                break
            time.sleep(0.5)
        slurm_rec = next(r for r in records.values() if r["engine"] == "slurm")
        # slurm.output_dir unset: the job's files are the run's own, under the state directory (both nodes run on
        # this host, so they see it), and no ./primus-runs appears where the job was submitted from.
        assert Path(slurm_rec["job_dir"]) == tmp_path / "state" / "primus-runner" / "runs" / slurm_rec["id"] / "slurm"
        assert Path(slurm_rec["log"]).parent == Path(slurm_rec["job_dir"]) and Path(slurm_rec["log"]).is_file()
        assert not (ws.cwd / "primus-runs").exists()
        assert (slurm_rec["exit_code"], records[attached]["exit_code"], records[detached]["exit_code"]) == (0, 3, 4)
        assert slurm_rec["trackers"]["run_ids"]["wandb"] == run_id and slurm_rec["job_id"]
        assert all(set(r) >= {"id", "engine", "name", "state", "exit_code", "started", "ended", "log"} for r in records.values())
        shown = run("logs", slurm_rec["id"])
        assert shown.returncode == 0 and "[0] hf=***" in shown.stdout and "[1] hf=***" in shown.stdout, shown.stderr
        assert run("logs", slurm_rec["job_id"], "--tail", "1").stdout.splitlines()[-1].endswith("hf=***")
        assert run("logs", attached).stdout == "attached\n"
        assert run("logs", detached).stdout == "detached\n"
    finally:
        force_remove(detached)
    for base in (tmp_path / "state", tmp_path / "cache", node_cache.parent):
        for path in base.rglob("*"):
            if path.is_file():
                assert_no_leak(path.read_bytes(), canary, str(path))
