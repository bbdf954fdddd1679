"""``runs``, ``runs show``, ``runs gc``: the store read from any directory, a run whose runner died shown
as ``lost``; ``runs gc`` deletes only the run directories it made, inside the state directory it owns:
the run store is shared and group-writable, so a record another user wrote (naming any
directory of yours as its ``run_dir``) must not make ``gc`` delete that directory."""

from __future__ import annotations

import json
import os

import pytest

from cli_runner import run_cli
from runner.errors import UsageError
from runner.runs import commands, liveness, paths
from runner.runs.store import Store
from runner.ui import Output


def _record(run_id: str, run_dir: str, uid: int) -> dict:
    return {"id": run_id, "uid": uid, "user": "you", "host": "h", "engine": "docker", "name": "job", "state": "exited",
            "exit_code": 0, "started_ts": 1.0, "ended_ts": 2.0, "run_dir": run_dir}


def test_gc_removes_its_own_run_directory_and_nothing_a_record_points_elsewhere(tmp_path):
    home = tmp_path / "home"
    state = home / ".local" / "state" / "primus-runner"
    state.mkdir(parents=True)
    precious = tmp_path / "precious"
    (precious / "data").mkdir(parents=True)
    (precious / "data" / "weights.bin").write_text("months of training\n")
    own = state / "runs" / "20260101-000001-aaaaaa"
    own.mkdir(parents=True)
    (own / "log").write_text("a finished run's log\n")
    store = Store.open(state / "runs.db")
    store.put(_record("20260101-000001-aaaaaa", "runs/20260101-000001-aaaaaa", os.getuid()))
    store.put(_record("20260101-000002-bbbbbb", str(precious), os.getuid()))            # a planted record
    store.put(_record("..", "runs/..", os.getuid()))                                      # the state directory itself
    store.close()
    result = run_cli(tmp_path, "runs", "gc", "--older-than", "1s", home=home)
    assert result.returncode == 0, result.stderr
    assert (precious / "data" / "weights.bin").exists(), "gc deleted a directory a record named"
    assert (state / "runs.db").exists(), "gc deleted its own state directory"
    assert not own.exists(), "gc keeps removing the runs it made"


@pytest.mark.parametrize("text, seconds", [("30d", 30 * 86400), ("12h", 43200), ("1.5m", 90), ("45 s", 45), ("2W", 14 * 86400)])
def test_durations(text, seconds):
    assert commands.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["30", "d", "-1d", "1y", "1d2h"])
def test_a_duration_without_a_unit_or_with_another_is_a_usage_error(text):
    with pytest.raises(UsageError, match="is not a duration"):
        commands.parse_duration(text)


@pytest.fixture
def store(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    opened = Store.open()
    yield opened
    opened.close()


def _run(run_id: str, started: float, **extra) -> dict:
    import socket

    return {"id": run_id, "uid": os.getuid(), "user": "you", "host": socket.gethostname(), "engine": "docker", "name": "job",
            "state": "succeeded", "exit_code": 0, "started_ts": started, "ended_ts": started + 75, "command": ["python", "train.py"],
            **extra}


def test_a_running_record_whose_runner_let_go_of_its_lock_is_lost_and_stored_so(store):
    run_dir = paths.runs_dir() / "r1"
    run_dir.mkdir(parents=True)
    liveness.release(liveness.hold(run_dir))  # the lock file is there, nobody holds it: the runner died
    rec = _run("r1", 1.0, state="running", exit_code=None, ended_ts=None, run_dir="runs/r1")
    store.put(rec)
    assert commands.reconcile(store, dict(rec))["state"] == "lost"
    assert store.get("r1")["state"] == "lost" and "SIGKILL" in store.get("r1")["note"]


def test_a_running_record_whose_runner_holds_its_lock_stays_running(store):
    run_dir = paths.runs_dir() / "r2"
    run_dir.mkdir(parents=True)
    fd = liveness.hold(run_dir)
    try:
        rec = _run("r2", 1.0, state="running", exit_code=None, ended_ts=None, run_dir="runs/r2")
        assert commands.reconcile(store, dict(rec))["state"] == "running"
    finally:
        liveness.release(fd)


def test_runs_lists_the_newest_first_as_a_table_or_json(store, capsys):
    store.put(_run("20260101-000001-aaaaaa", 1767225600.0, name="first"))
    store.put(_run("20260101-000002-bbbbbb", 1767225700.0, name="second", state="failed", exit_code=2,
                   command=["python", "-c", "x" * 100]))
    assert commands.cmd_runs(Output(color=False)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "STATE", "EXIT", "ENGINE", "NAME", "STARTED", "DURATION", "COMMAND"]
    assert lines[1].split()[:5] == ["20260101-000002-bbbbbb", "failed", "2", "docker", "second"]
    assert lines[1].endswith("…") and len(lines[1].split("  ")[-1].strip()) == commands.COMMAND_WIDTH
    assert "1:15" in lines[2].split() and lines[2].endswith("python train.py")
    assert commands.cmd_runs(Output(json_mode=True, color=False), state="failed") == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in doc] == ["20260101-000002-bbbbbb"] and "started_ts" not in doc[0]


def test_runs_lists_only_your_runs_unless_asked_for_all(store, capsys):
    store.put(_run("r-mine", 2.0))
    store.put(_run("r-theirs", 1.0, uid=os.getuid() + 1, user="them"))
    commands.cmd_runs(Output(json_mode=True, color=False))
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["r-mine"]
    commands.cmd_runs(Output(json_mode=True, color=False), all_users=True)
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["r-mine", "r-theirs"]


def test_runs_show_names_fields_and_secret_names_never_a_value(store, capsys):
    store.put(_run("r1", 1.0, env=[{"name": "HF_TOKEN", "secret": True}, {"name": "LR", "secret": False}],
                   gpus={"flavor": "amd", "selected": [{"index": 0, "uuid": "GPU-1"}], "devices": ["/dev/kfd"]}))
    assert commands.cmd_show("r1", Output(color=False)) == 0
    text = capsys.readouterr().out
    assert "id            r1\n" in text and "command       python train.py\n" in text
    assert "env           HF_TOKEN (secret), LR\n" in text
    assert "gpus          amd: 0 (GPU-1); devices /dev/kfd\n" in text
    with pytest.raises(UsageError, match="no run nope recorded"):
        commands.cmd_show("nope", Output(color=False))


def test_gc_dry_run_removes_nothing_and_keeps_another_users_runs(store, capsys):
    own = paths.runs_dir() / "20260101-000001-aaaaaa"
    own.mkdir(parents=True)
    store.put(_run("20260101-000001-aaaaaa", 1.0, run_dir="runs/20260101-000001-aaaaaa"))
    store.put(_run("20260101-000002-bbbbbb", 1.0, uid=os.getuid() + 1))
    store.put(_run("20260101-000003-cccccc", 1.0, state="running"))
    commands.cmd_gc("1s", Output(color=False), dry_run=True)
    assert own.exists() and store.get("20260101-000001-aaaaaa")
    assert f"would remove run 20260101-000001-aaaaaa (job), {own}" in capsys.readouterr().err
    commands.cmd_gc("1s", Output(color=False))
    assert not own.exists() and store.get("20260101-000001-aaaaaa") is None
    assert store.get("20260101-000002-bbbbbb") and store.get("20260101-000003-cccccc")
    assert "removed 1 run older than 1s; 2 left (running, or another user's)" in capsys.readouterr().err
