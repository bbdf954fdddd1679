"""``runs gc`` deletes only the run directories it made, inside the state directory it owns:
the run store is shared and group-writable, so a record another user wrote (naming any
directory of yours as its ``run_dir``) must not make ``gc`` delete that directory."""

from __future__ import annotations

import os

from cli_runner import run_cli

from runner.runs.store import Store


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
