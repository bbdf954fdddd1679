"""The run store: records survive concurrent writers, and a broken store says what is wrong."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import stat

import pytest

from runner.runs.store import Store, StoreError, explain


def _record(run_id: str, started: float, **extra) -> dict:
    return {"id": run_id, "uid": os.getuid(), "user": "u", "host": "h", "engine": "docker", "name": extra.pop("name", "job"),
            "state": "running", "exit_code": None, "started_ts": started, "ended_ts": None, "job_id": None, **extra}


def test_put_get_and_find_by_id_prefix_job_and_name(tmp_path):
    store = Store.open(tmp_path / "runs.db")
    store.put(_record("20260101-000001-aaaaaa", 1.0, name="alpha"))
    store.put(_record("20260101-000002-bbbbbb", 2.0, name="alpha", job_id="77"))
    assert store.get("20260101-000001-aaaaaa")["name"] == "alpha"
    assert [r["id"] for r in store.find("alpha")] == ["20260101-000002-bbbbbb", "20260101-000001-aaaaaa"]  # newest first
    assert [r["id"] for r in store.find("77")] == ["20260101-000002-bbbbbb"]
    assert [r["id"] for r in store.find("20260101-000001")] == ["20260101-000001-aaaaaa"]
    assert store.find("2026010_") == []  # a LIKE wildcard in the key is literal
    assert [r["id"] for r in store.list(limit=1)] == ["20260101-000002-bbbbbb"]
    assert stat.S_IMODE((tmp_path / "runs.db").stat().st_mode) == 0o600
    assert sqlite3.connect(tmp_path / "runs.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _writer(path: str, index: int) -> None:
    store = Store.open(__import__("pathlib").Path(path))
    rec = _record(f"20260101-000000-{index:06x}", float(index))
    store.put(rec)
    rec.update(state="succeeded", exit_code=0)
    store.put(rec)


def test_sixteen_concurrent_writers_leave_sixteen_complete_records(tmp_path):
    path = str(tmp_path / "state" / "runs.db")  # not there yet: the writers race to create it too
    procs = [multiprocessing.get_context("spawn").Process(target=_writer, args=(path, i)) for i in range(16)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 16
    rows = Store.open(tmp_path / "state" / "runs.db").list()
    assert len(rows) == 16 and all(r["state"] == "succeeded" and r["exit_code"] == 0 for r in rows)


def test_a_corrupt_store_is_one_message_with_the_fix(tmp_path):
    path = tmp_path / "runs.db"
    path.write_bytes(b"this is not sqlite " * 100)
    with pytest.raises(StoreError) as err:
        Store.open(path).put(_record("x", 1.0))
    assert "corrupt" in err.value.message and str(path) in err.value.message and "mv" in err.value.hint


@pytest.mark.skipif(os.getuid() == 0, reason="root writes anywhere")
def test_an_unwritable_state_directory_is_one_message(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(StoreError) as err:
            Store.open(tmp_path / "sub" / "runs.db")
        assert "not writable" in err.value.message
    finally:
        tmp_path.chmod(0o700)


@pytest.mark.parametrize("exc, says, fix", [
    (OSError(28, "No space left on device"), "is full", "free space"),
    (sqlite3.DatabaseError("database disk image is malformed"), "is corrupt", ".broken"),
    (sqlite3.OperationalError("attempt to write a readonly database"), "is not writable", "fix its permissions"),
    (sqlite3.OperationalError("database is locked"), "stayed locked for 15 s", "retry"),
    (sqlite3.OperationalError("something else"), "cannot be used (OperationalError: something else)", ".broken"),
])
def test_explain_says_what_is_wrong_and_the_fix(tmp_path, exc, says, fix):
    error = explain(exc, tmp_path / "runs.db")
    assert says in error.message and fix in error.hint


def test_open_without_create_on_no_store_says_so(tmp_path):
    with pytest.raises(StoreError, match="no run store yet"):
        Store.open(tmp_path / "runs.db", create=False)
    assert not (tmp_path / "runs.db").exists()


def test_a_later_write_of_a_run_changes_it_in_place_and_filters_and_completion_read_the_columns(tmp_path):
    store = Store.open(tmp_path / "runs.db")
    store.put(_record("r1", 1.0, name="a"))
    store.put(_record("r1", 1.0, name="a", state="failed", exit_code=1))
    store.put(_record("r2", 2.0, name="b", engine="slurm"))
    assert [r["id"] for r in store.list(state="failed")] == ["r1"] and store.get("r1")["exit_code"] == 1
    assert [r["id"] for r in store.list(engine="slurm")] == ["r2"]
    assert store.ids_and_names(os.getuid()) == [("r2", "b"), ("r1", "a")]
    assert [r["id"] for r in store.older_than(1.5)] == ["r1"]
    assert store.delete(["r1"]) == 1 and store.get("r1") is None
