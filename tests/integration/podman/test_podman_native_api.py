"""On Podman a launch speaks Podman's own API (``/v4.0.0/libpod/…``), counted request by request.

Every request the runner makes goes through a recording proxy in front of rootful Podman's
socket (``loopback_servers``): the test counts the calls and reads their paths and bodies.
Podman's Docker-compatible layer waits by polling without pause until the exit is recorded
(a core of its service meanwhile) and removes by stopping with the StopTimeout first (the
runner killed before it); its own endpoints do neither. What that saves the service in CPU time
is a figure of ``bench/bench.py up_true_podman``, not a timed test. Engines: ``bash .ci/setup-podman.sh``.
"""

from __future__ import annotations

import json
import re

import pytest

from docker_helpers import Workspace, force_remove, unique
from engine_fixtures import PODMAN_SOCKET, assert_no_leak
from loopback_servers import RecordingProxy

pytestmark = [pytest.mark.docker, pytest.mark.podman, pytest.mark.engines("podman")]

LIBPOD = "/v4.0.0/libpod"
IMAGE_JSON = "/images/primus-test%2Fbusybox%3Alatest/json"


def _calls(proxy: RecordingProxy) -> list[tuple[str, str]]:
    """(method, path) of each request but the version negotiation's ``/_ping``; a container id reads ID."""
    return [(r.method, re.sub(r"/containers/[0-9a-f]{64}", "/containers/ID", r.path)) for r in proxy.requests if r.path != "/_ping"]


def _without_run_label(body: dict) -> dict:
    return {**body, "labels": {k: v for k, v in body["labels"].items() if k != "io.primus-runner.run"}}


@pytest.fixture
def proxy(tmp_path, engine_host):
    with RecordingProxy(PODMAN_SOCKET, str(tmp_path / "podman.sock")) as recording:
        yield recording


def test_a_podman_launch_with_a_secret_makes_its_calls_on_podmans_own_api(tmp_path, canary, proxy):
    ws = Workspace(tmp_path, canary)
    name = unique("libpod-up")
    result = ws.run("up", "--name", name, "--env", "HF_TOKEN", "--", "sh", "-c", 'echo "v=$HF_TOKEN n=${#HF_TOKEN}"; exit 3',
                    env={"DOCKER_HOST": proxy.url})
    force_remove(name)
    assert result.returncode == 3, result.stderr.decode()
    assert f"v=*** n={len(canary['HF_TOKEN'])}" in result.stdout.decode()  # the secret reached the job through the shim
    calls = _calls(proxy)
    assert calls and all(path.startswith(LIBPOD + "/") for _, path in calls), calls
    lifecycle = [(m, p[len(LIBPOD):]) for m, p in calls if "/containers/" in p]
    assert lifecycle == [("POST", "/containers/create"), ("HEAD", "/containers/ID/archive"), ("POST", "/containers/ID/attach"),
                         ("POST", "/containers/ID/start"), ("POST", "/containers/ID/wait"), ("DELETE", "/containers/ID")]
    images = [(m, p[len(LIBPOD):]) for m, p in calls if "/images/" in p]
    assert images and set(images) == {("GET", IMAGE_JSON)} and len(images) <= 2  # the shim's entrypoint, the run's digest
    delete = next(r for r in proxy.requests if r.method == "DELETE")
    assert "timeout=0" in delete.query and "force=true" in delete.query  # killed at once: no separate kill, no StopTimeout
    wait = next(r for r in proxy.requests if r.path.endswith("/wait"))
    assert "interval=" in wait.query  # Podman's own wait polls at an interval (its compat wait spins)
    for r in proxy.requests:  # the value travels only in the attach stream, which the recorder does not parse
        assert_no_leak(r.target.encode() + r.body, canary, f"{r.method} {r.path}")


def test_the_dry_run_shows_the_body_podmans_create_gets(tmp_path, canary, proxy):
    ws = Workspace(tmp_path, canary)
    name = unique("libpod-dry")
    job = ["sh", "-c", "echo ok"]
    dry = ws.run("--json", "up", "--dry-run", "--name", name, "--env", "HF_TOKEN", "--memory", "256m", "--", *job,
                 env={"DOCKER_HOST": f"unix://{PODMAN_SOCKET}"})
    assert dry.returncode == 0, dry.stderr.decode()
    shown = json.loads(dry.stdout)["request"]
    assert shown["engine"] == "podman" and shown["libpod_create"] is not None
    result = ws.run("up", "--name", name, "--env", "HF_TOKEN", "--memory", "256m", "--", *job, env={"DOCKER_HOST": proxy.url})
    force_remove(name)
    assert result.returncode == 0, result.stderr.decode()
    (sent,) = [r.json() for r in proxy.requests if r.path == LIBPOD + "/containers/create"]
    assert _without_run_label(sent) == _without_run_label(shown["libpod_create"])
    assert sent["resource_limits"] == {"memory": {"limit": 256 << 20}} and sent["stdin"] is True
    assert_no_leak(dry.stdout + dry.stderr + json.dumps(sent).encode(), canary, "the dry run and the create body")


def test_a_passed_through_option_podmans_own_create_lacks_goes_to_its_compat_create_and_the_rest_stays_native(proxy):
    """``--pids-limit`` (a ``docker run`` option passed through) has no translation here: the compat
    create carries it as given, and start, wait and remove still go to Podman's own API."""
    from runner.clients.engine_api import Engine

    eng = Engine(host=proxy.url)
    name = unique("libpod-passthrough")
    config = {"Image": "primus-test/busybox:latest", "Cmd": ["sh", "-c", "exit 5"], "HostConfig": {"PidsLimit": 64}}
    try:
        cid = eng.create(name, config)
        eng.start(cid)
        assert eng.wait(cid) == 5
        assert eng.inspect(cid)["HostConfig"]["PidsLimit"] == 64
    finally:
        eng.remove(name)
    calls = _calls(proxy)
    assert calls[0] == ("POST", "/v1.41/containers/create")
    assert [c for c in calls[1:] if not c[1].endswith("/json")] == [
        ("POST", f"{LIBPOD}/containers/ID/start"), ("POST", f"{LIBPOD}/containers/ID/wait"), ("DELETE", f"{LIBPOD}/containers/{name}")]
