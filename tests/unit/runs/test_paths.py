"""Where runs live: ``$XDG_STATE_HOME/primus-runner`` (a relative value ignored), paths stored relative to it."""

from __future__ import annotations

import re
from pathlib import Path

from runner.runs import paths


def test_the_state_directory_follows_xdg_and_ignores_a_relative_value(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert paths.state_dir() == tmp_path / "state" / "primus-runner"
    assert paths.db_path() == tmp_path / "state" / "primus-runner" / "runs.db"
    assert paths.runs_dir() == tmp_path / "state" / "primus-runner" / "runs"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")
    assert paths.state_dir() == tmp_path / "home" / ".local" / "state" / "primus-runner"


def test_the_cache_home_follows_xdg_and_ignores_a_relative_value(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert paths.cache_home() == tmp_path / "cache" / "primus-runner"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert paths.cache_home() == tmp_path / "home" / ".cache" / "primus-runner"


def test_a_path_inside_the_state_directory_is_stored_relative_and_resolved_back(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "old"))
    inside = paths.runs_dir() / "r1" / "output.log"
    assert paths.stored(inside) == "runs/r1/output.log"
    assert paths.stored("/elsewhere/job") == "/elsewhere/job" and paths.stored(None) is None
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "moved"))  # the whole directory moved
    assert paths.resolved("runs/r1/output.log") == tmp_path / "moved" / "primus-runner" / "runs" / "r1" / "output.log"
    assert paths.resolved("/elsewhere/job") == Path("/elsewhere/job") and paths.resolved("") is None


def test_run_ids_sort_by_start_and_differ():
    ids = {paths.new_run_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", i) for i in ids)
