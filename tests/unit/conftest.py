"""Fixtures for unit tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working directory that is also HOME, with a private validation cache: no user config leaks in."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(autouse=True)
def _ci_output_restored(monkeypatch):
    """A test that runs the node agent or a node's context in process switches CI output off for the
    process (``runner.ui.ci.disable``); the next test gets it back as it was."""
    from runner.ui import ci

    monkeypatch.setattr(ci, "_enabled", ci._enabled)
