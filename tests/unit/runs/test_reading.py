"""Reading runs: no store yet is no runs, a broken one an error with its fix; an engine's times."""

from __future__ import annotations

import os

import pytest

from runner.errors import RuntimeFailure
from runner.runs import paths
from runner.runs.reading import engine_time, open_store, running_named
from runner.runs.store import Store


@pytest.fixture
def state(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    return paths.state_dir()


def test_no_store_yet_is_none_and_opening_creates_nothing(state):
    assert open_store() is None
    assert not state.exists()


def test_a_corrupt_store_is_an_error_saying_how_to_move_it_away(state):
    state.mkdir(parents=True)
    paths.db_path().write_bytes(b"not a database at all" * 100)
    with pytest.raises(RuntimeFailure) as info:
        open_store()
    assert "corrupt" in info.value.message and f"mv {paths.db_path()} {paths.db_path()}.broken" in info.value.hint


def test_running_named_is_this_users_newest_running_container_of_that_name(state):
    store = Store.open()
    base = {"uid": os.getuid(), "name": "job", "engine": "docker"}
    store.put({**base, "id": "a", "started_ts": 1.0, "state": "running", "container_id": "c1"})
    store.put({**base, "id": "b", "started_ts": 2.0, "state": "succeeded", "container_id": "c2"})
    store.put({**base, "id": "c", "started_ts": 3.0, "state": "running", "container_id": None})
    store.put({**base, "id": "d", "started_ts": 4.0, "state": "running", "container_id": "c4", "uid": os.getuid() + 1})
    store.close()
    assert running_named("job")["id"] == "a"
    assert running_named("other") is None


@pytest.mark.parametrize("stamp, expected", [
    ("2026-01-02T03:04:05Z", 1767323045.0),
    ("2026-01-02T03:04:05.123456789Z", 1767323045.123456),  # nanoseconds cut to what Python reads
    ("2026-01-02T04:04:05+01:00", 1767323045.0),
    ("0001-01-01T00:00:00Z", None), ("", None), (None, None), ("yesterday", None),
])
def test_engine_time(stamp, expected):
    assert engine_time(stamp) == expected
