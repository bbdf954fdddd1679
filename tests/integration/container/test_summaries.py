"""What the runner says around a job is true: a tracker path is printed as holding the job's output only
when it does, every tracker directory of the config reaches a plain command as a variable, and a
detached run says what to run later (``runs show RUN``, which gives the ``wandb sync`` command)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from docker_helpers import CONFIG, Workspace, force_remove, unique
from engine_fixtures import assert_no_leak

pytestmark = pytest.mark.docker

TENSORBOARD = "trackers:\n  framework: generic\n  disable_tensorboard: false\n  tensorboard_dir: /tmp/tb\n"
WANDB_OFFLINE = "trackers:\n  framework: generic\n  disable_wandb: false\n  wandb_project: summaries\n  wandb_save_dir: /tmp/wandb\n"
# What W&B's client lays out for an offline run (the busybox image has no client).
FAKE_OFFLINE_RUN = 'd="$WANDB_DIR/wandb/offline-run-20260101_000000-$WANDB_RUN_ID"; mkdir -p "$d"; echo w > "$d/run-$WANDB_RUN_ID.wandb"'


def _workspace(tmp_path: Path, canary: dict, trackers: str) -> Workspace:
    ws = Workspace(tmp_path, canary, CONFIG + trackers)
    ws.env["XDG_STATE_HOME"] = str(tmp_path / "state")
    ws.without_host_trackers()
    return ws


def test_tensorboard_events_are_named_only_when_the_job_wrote_some(tmp_path, canary, busybox_image):
    ws = _workspace(tmp_path, canary, TENSORBOARD)
    missing = ws.run("up", "--", "pyhton3", "train.py")  # the job never starts: no event files
    err = missing.stderr.decode()
    assert missing.returncode == 127, err
    assert "TensorBoard events:" not in err and "tensorboard --logdir" not in err, err
    assert "TensorBoard: the job wrote no event files" in err, err
    wrote = ws.run("up", "--", "sh", "-c", 'touch "$TENSORBOARD_DIR/events.out.tfevents.1.host"')
    err = wrote.stderr.decode()
    assert wrote.returncode == 0, err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("TensorBoard events: ")]
    logdir = Path(line.split("TensorBoard events: ", 1)[1].split(" (", 1)[0])
    assert (logdir / "events.out.tfevents.1.host").is_file()
    assert f"(tensorboard --logdir {logdir})" in line


def test_every_tracker_directory_of_the_config_reaches_a_plain_command_as_a_variable(tmp_path, canary, busybox_image):
    ws = _workspace(tmp_path, canary, TENSORBOARD + WANDB_OFFLINE.replace("trackers:\n  framework: generic\n", ""))
    done = ws.run("up", "--env", "WANDB_MODE=offline", "--", "sh", "-c", 'echo "tb=$TENSORBOARD_DIR wandb=$WANDB_DIR"')
    assert done.returncode == 0, done.stderr.decode()
    assert "tb=/tmp/tb wandb=/tmp/wandb" in done.stdout.decode()
    planned = json.loads(ws.run("--json", "plan", "--", "python", "train.py").stdout)
    assert planned["env"]["TENSORBOARD_DIR"] == "/tmp/tb"
    docs = (Path(__file__).parents[3] / "docs" / "trackers.md").read_text()
    assert "`TENSORBOARD_DIR`" in docs and "`WANDB_DIR`" in docs


def test_a_detached_run_says_what_to_run_later_and_runs_show_gives_the_wandb_sync_command(tmp_path, canary, busybox_image):
    ws = _workspace(tmp_path, canary, WANDB_OFFLINE)
    name = unique("sum-det")
    started = ws.run("up", "-d", "--name", name, "--env", "WANDB_MODE=offline", "--", "sh", "-c", FAKE_OFFLINE_RUN)
    try:
        said = started.stdout.decode() + started.stderr.decode()
        assert started.returncode == 0, said
        assert "follows the job" not in said, said
        (run_id,) = re.findall(r"primus-runner runs show ([\w-]+)", said)
        deadline = time.monotonic() + 60
        while True:
            shown = ws.run("runs", "show", run_id)
            if b"state         succeeded" in shown.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        text = shown.stdout.decode()
        assert shown.returncode == 0 and "state         succeeded" in text, (text, shown.stderr)
        (sync,) = re.findall(r"wandb sync (\S+)", text)
        assert Path(sync).is_dir() and Path(sync).name.startswith("offline-run-"), text
        assert_no_leak(shown.stdout + shown.stderr + started.stdout + started.stderr, canary, "up -d and runs show")
    finally:
        ws.run("down", name)
        force_remove(name)


def test_an_mlflow_file_store_whose_host_directory_is_missing_is_said_truly(tmp_path, canary, busybox_image):
    """The store is under a mounted host directory, and not made yet: no line contradicts another."""
    ws = _workspace(tmp_path, canary, "trackers:\n  framework: generic\n  disable_mlflow: false\n  mlflow_run_name: summaries\n")
    (tmp_path / "data").mkdir()
    store = tmp_path / "data" / "mlruns"
    done = ws.run("up", "--volume", f"{tmp_path / 'data'}:/data", "--env", "MLFLOW_TRACKING_URI=file:/data/mlruns", "--", "true")
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert f"mlflow output /data/mlruns (MLFLOW_TRACKING_URI) is on the host at {store} (a mounted path, not there yet)" in err, err
    assert "nor mounted from one" not in err, err
    assert f"MLflow: the file store /data/mlruns is on the host at {store}, which is not a directory" in err, err
    assert "MLflow file store:" not in err and "MLflow: the job wrote nothing to its file store /data/mlruns" in err, err
