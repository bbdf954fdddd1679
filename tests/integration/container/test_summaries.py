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
    assert "MLflow file store:" not in err and "MLflow: the job wrote nothing to its file store" in err, err


def test_up_ends_with_one_line_and_runs_colours_states_on_a_terminal_with_the_command(tmp_path, canary, busybox_image):
    import sys

    from pty_session import PtySession

    ws = _workspace(tmp_path, canary, "")
    ok = ws.run("up", "--", "sh", "-c", "echo fine")
    bad = ws.run("up", "--", "sh", "-c", "exit 3")
    assert (ok.returncode, bad.returncode) == (0, 3), bad.stderr.decode()
    last = bad.stderr.decode().rstrip("\n").splitlines()[-1]
    match = re.fullmatch(r"exit 3 after (\d+\.\d) s, run (\S+) \(primus-runner runs show \2; primus-runner logs \2\)", last)
    assert match, last
    (newest, _) = json.loads(ws.run("--json", "runs").stdout)
    assert newest["id"] == match.group(2) and newest["exit_code"] == 3
    record = ws.run("runs", "show", newest["id"]).stdout.decode()
    assert "gpus          none\n" in record and "{'" not in record, record  # text, not a Python repr

    piped = ws.run("runs").stdout.decode()
    assert "\x1b[" not in piped
    assert piped.splitlines()[0].split()[-1] == "COMMAND" and "sh -c exit 3" in piped and "sh -c echo fine" in piped
    env = {k: v for k, v in ws.env.items() if k not in ("NO_COLOR", "CI")}  # a person at a terminal (CI turns colour off)
    shown = {}
    for what, extra in (("terminal", {}), ("NO_COLOR", {"NO_COLOR": "1"})):
        session = PtySession([sys.executable, "-m", "runner", "runs"], ws.cwd, {**env, **extra}, cols=160)
        try:
            assert session.finish() == 0
        finally:
            session.close()
        shown[what] = bytes(session.transcript).decode()
    assert "\x1b[32msucceeded\x1b[0m" in shown["terminal"] and "\x1b[31mfailed\x1b[0m" in shown["terminal"], shown["terminal"]
    assert "sh -c exit 3" in shown["terminal"]
    assert "\x1b[" not in shown["NO_COLOR"] and "failed" in shown["NO_COLOR"]


@pytest.mark.parametrize("images", ["images:\n  file: Dockerfile\n", ""], ids=["a plain Dockerfile", "the flavor's recipe"])
def test_check_names_the_builder_build_uses(tmp_path, canary, busybox_image, images):
    ws = _workspace(tmp_path, canary, images)
    (ws.cwd / "Dockerfile").write_text(f"FROM {busybox_image}\nRUN echo built\n")
    checked = ws.run("check")
    (note,) = [line for line in checked.stderr.decode().splitlines() + checked.stdout.decode().splitlines() if line.startswith("builder: ")]
    planned = json.loads(ws.run("--json", "build", "--dry-run").stdout)["builder"]
    assert note.split(" (BuildKit needs", 1)[0] == f"builder: {planned['describe']}", (note, planned)
