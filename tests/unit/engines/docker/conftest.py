"""The Docker engine's unit tests: the user's stdin as a pipe (``-i`` without a terminal)."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture
def stdin_pipe(monkeypatch):
    """sys.stdin is the read end of a pipe (not a terminal); the write end is returned."""
    read, write = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(read, "r"))
    yield write
    try:
        os.close(write)
    except OSError:  # the test closed it (the user's EOF)
        pass
