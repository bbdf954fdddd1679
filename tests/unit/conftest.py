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
