"""``ps``, ``logs`` and ``down`` act on the engine the config names: with
``container.engine: podman`` on a host whose Docker daemon also answers (and
comes first when the engine is auto-detected), they find the Podman containers
``up`` made there. Engines: ``bash .ci/setup-engines.sh`` (Docker and rootful Podman).

``down --all`` runs as a dry run here: on this shared rootful Podman a real one
would also remove other tests' containers of the same user. It takes the same
client as ``down NAME`` (``runner.engines.docker.verbs._client``).
"""

from __future__ import annotations

import json
import time

import pytest

from docker_helpers import CONFIG, Workspace, unique
from engine_fixtures import PODMAN_SOCKET, docker_or_missing, podman_or_missing, unix_http

pytestmark = [pytest.mark.docker, pytest.mark.podman]

PODMAN_CONFIG = CONFIG.replace("container:\n", "container:\n  engine: podman\n", 1)


def _on_podman(name: str) -> dict | None:
    status, _, body = unix_http(PODMAN_SOCKET, f"/v1.41/containers/{name}/json")
    return json.loads(body) if status == 200 else None


@pytest.fixture
def ws(tmp_path, busybox_image):
    podman_or_missing()
    docker_or_missing()  # the point: Docker answers too, and auto-detection would pick it
    ws = Workspace(tmp_path, config=PODMAN_CONFIG)
    ws.env.pop("CONTAINER_HOST", None)  # Workspace drops DOCKER_HOST: only the config chooses
    return ws


def test_ps_logs_and_down_find_the_podman_container_up_made(ws):
    name = unique("arch-podman")
    up = ws.run("up", "--detach", "--name", name, "--", "sh", "-c", "echo hello-from-podman; sleep 300")
    assert up.returncode == 0, up.stderr
    try:
        assert _on_podman(name) is not None, "up did not launch on Podman"
        listed = ws.run("--json", "ps")
        assert listed.returncode == 0, listed.stderr
        assert name in [row["name"] for row in json.loads(listed.stdout)]
        for _ in range(50):
            logs = ws.run("logs", name)
            if b"hello-from-podman" in logs.stdout:
                break
            time.sleep(0.1)
        assert logs.returncode == 0 and b"hello-from-podman" in logs.stdout, logs.stderr
        would = ws.run("--json", "down", "--all", "--dry-run")
        assert would.returncode == 0, would.stderr
        assert name in json.loads(would.stdout)["would_remove"]  # before: "would remove 0" (Docker's)
        down = ws.run("down", name)
        assert down.returncode == 0, down.stderr
        assert f"removed {name}".encode() in down.stderr
        assert _on_podman(name) is None
    finally:
        unix_http(PODMAN_SOCKET, f"/v1.41/containers/{name}?force=true", method="DELETE")
