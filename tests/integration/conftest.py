"""Fixtures the integration folders share (the engines' own are in tests/conftest.py)."""

from __future__ import annotations

import pytest

from docker_helpers import Workspace


@pytest.fixture
def ws(tmp_path, canary, busybox_image, engine_host) -> Workspace:
    """A Workspace (tests/integration/docker_helpers.py) with the canaries in its environment, on the engine
    this run of the test targets: Docker, or Podman through DOCKER_HOST. A file that needs another kind
    defines its own ``ws``."""
    ws = Workspace(tmp_path, canary)
    ws.env.update(engine_host.env)
    return ws
