"""A detached container's end: when the engine says it finished, and ``down`` recording each run's end first."""

from __future__ import annotations

import os

import pytest

from runner.runs import detached, paths
from runner.runs.store import Store


@pytest.mark.parametrize("info, done", [
    ({"State": {"Running": False, "Status": "exited"}}, True),
    ({"State": {"Status": "dead"}}, True),
    ({"State": {"Running": True, "Status": "running"}}, False),
    ({"State": {"Status": "created"}}, False), ({"State": {"Status": "paused"}}, False),
    ({"State": {"Status": "restarting"}}, False), ({}, True),
])
def test_finished(info, done):
    assert detached.finished(info) is done


class _Engine:
    def __init__(self, states: dict):
        self.states = states

    def inspect(self, container_id):
        from runner.clients.engine_api import ApiError

        if container_id not in self.states:
            raise ApiError(404, "no such container")
        return {"State": self.states[container_id]}


class _Out:
    def __init__(self):
        self.warnings = []

    def warn(self, message):
        self.warnings.append(message)


def test_down_records_an_ended_run_its_code_and_a_running_one_as_interrupted(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    engine = _Engine({"c1": {"Status": "exited", "ExitCode": 3, "FinishedAt": "2026-01-02T03:04:05Z"},
                      "c2": {"Running": True, "Status": "running"}})
    monkeypatch.setattr("runner.clients.engine_api.shared.engine_at", lambda host: engine)
    store = Store.open()
    base = {"uid": os.getuid(), "engine": "docker", "state": "running", "detached": True}
    for i, name in ((1, "ended"), (2, "going"), (3, "gone")):
        store.put({**base, "id": f"r{i}", "name": name, "started_ts": float(i), "container_id": f"c{i}"})
    store.put({**base, "id": "r4", "name": "attached", "started_ts": 4.0, "detached": False, "container_id": "c1"})
    store.close()
    out = _Out()
    detached.before_down((), True, None, out)
    store = Store.open(paths.db_path())
    assert (store.get("r1")["state"], store.get("r1")["exit_code"], store.get("r1")["ended"]) == (
        "failed", 3, "2026-01-02T03:04:05+00:00")
    assert store.get("r2")["state"] == "interrupted" and "primus-runner down" in store.get("r2")["note"]
    assert store.get("r3")["state"] == "running"  # its container is gone: nothing to tell
    assert store.get("r4")["state"] == "running"  # not detached: not down's
    assert out.warnings == []


def test_down_by_name_touches_only_that_run_and_without_a_store_does_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr("runner.clients.engine_api.shared.engine_at", lambda host: _Engine({"c1": {"Status": "exited",
                                                                                                  "ExitCode": 0}}))
    detached.before_down(("x",), False, None, _Out())
    assert not paths.db_path().exists()
    store = Store.open()
    base = {"uid": os.getuid(), "engine": "docker", "state": "running", "detached": True, "container_id": "c1"}
    store.put({**base, "id": "r1", "name": "a", "started_ts": 1.0})
    store.put({**base, "id": "r2", "name": "b", "started_ts": 2.0})
    detached.before_down(("a",), False, None, _Out())
    assert store.get("r1")["state"] == "succeeded" and store.get("r2")["state"] == "running"
