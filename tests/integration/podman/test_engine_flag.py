"""``--engine`` takes every engine users name: ``podman`` launches on Podman with a config that
names no engine (on a host whose Docker daemon answers too, and would be auto-detected first),
``direct`` is the process engine; ``plan``, ``check`` and the verbs take the
same names. Engines: ``bash .ci/setup-engines.sh`` (Docker and rootful Podman)."""

from __future__ import annotations

import json

import pytest

from docker_helpers import Workspace, unique
from engine_fixtures import PODMAN_SOCKET, docker_or_missing, podman_or_missing, unix_http

pytestmark = [pytest.mark.docker, pytest.mark.podman]


def _on_podman(name: str) -> bool:
    return unix_http(PODMAN_SOCKET, f"/v1.41/containers/{name}/json")[0] == 200


def _on_docker(name: str) -> bool:
    return unix_http("/var/run/docker.sock", f"/v1.41/containers/{name}/json")[0] == 200


@pytest.fixture
def ws(tmp_path, busybox_image):
    podman_or_missing()
    docker_or_missing()
    ws = Workspace(tmp_path)  # its config names no engine; Workspace drops DOCKER_HOST
    ws.env.pop("CONTAINER_HOST", None)
    return ws


def test_up_engine_podman_launches_on_podman_and_the_verbs_find_it(ws):
    flag, on, off = "podman", _on_podman, _on_docker
    name = unique(f"flag-{flag}")
    up = ws.run("up", "--engine", flag, "--detach", "--name", name, "--", "sleep", "60")
    assert up.returncode == 0, up.stderr
    try:
        assert on(name) and not off(name)
        listed = ws.run("--json", "ps", "--engine", flag)
        assert name in [row["name"] for row in json.loads(listed.stdout)], listed.stderr
        shown = ws.run("exec", "--engine", flag, name, "--", "echo", "reached")
        assert shown.returncode == 0 and shown.stdout == b"reached\n", shown.stderr
    finally:
        ws.run("down", "--engine", flag, name)
    assert not on(name)


def test_check_and_plan_take_podman(ws):
    checked = ws.run("--json", "check", "--engine", "podman")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["engine"]["engine"] == "podman"
    planned = ws.run("--json", "plan", "--engine", "podman", "--", "true")
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["request"]["engine"] == "podman"


def test_direct_is_the_process_engine(ws):
    alias = "direct"
    marker = ws.root / "only-on-the-host"
    marker.write_text("host-file\n")
    ran = ws.run("up", "--engine", alias, "--", "cat", str(marker))  # no mount: only a host process reads it
    assert ran.returncode == 0 and ran.stdout == b"host-file\n", ran.stderr
    assert ws.run("check", "--engine", alias).returncode == 0
