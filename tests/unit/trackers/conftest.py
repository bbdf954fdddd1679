"""Fixtures of the tracker tests."""

from __future__ import annotations

import pytest

from loopback_servers import json_answer


@pytest.fixture
def stand_in(servers):
    """``stand_in(status=200, body=None)``: a loopback server answering every request with ``status`` and JSON ``body``."""
    return lambda status=200, body=None: servers(json_answer(status, body))
