"""A detached or kept job's output on the host is masked: the engine keeps no log of it (the real
``docker logs`` has nothing to show), the runner's own copy in the run's log is what ``logs`` shows,
and ``audit`` reads a container's engine log too (a container started outside the runner)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from docker_helpers import CONFIG, Workspace, force_remove, inspect, unique
from engine_fixtures import assert_no_leak

pytestmark = pytest.mark.docker

# Prints its environment (the canaries with it), then a line that says it is done.
PRINTS_ENV = "env; echo job-done"


def _workspace(tmp_path: Path, canary: dict, engine_host) -> Workspace:
    ws = Workspace(tmp_path, canary, CONFIG)
    ws.env["XDG_STATE_HOME"] = str(tmp_path / "state")
    ws.env.update(engine_host.env)
    return ws


def _until_exited(ws: Workspace, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = json.loads(ws.run("--json", "ps").stdout)
        if any(c["name"] == name and c["status"] == "exited" for c in listed):
            return
        time.sleep(0.3)
    raise AssertionError(f"container {name} did not exit within {timeout} s")


def _engine_log(name: str) -> bytes:
    """What the engine's own CLI shows of the container's output (whatever it exits with)."""
    shown = subprocess.run(["docker", "logs", name], capture_output=True, timeout=60)
    return shown.stdout + shown.stderr


def _state_files(tmp_path: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (tmp_path / "state").rglob("*") if p.is_file()}


@pytest.mark.engines("docker", "podman")
def test_a_detached_job_leaves_no_log_with_the_engine_and_logs_shows_its_masked_copy(tmp_path, canary, engine_host, busybox_image):
    ws = _workspace(tmp_path, canary, engine_host)
    name = unique("out-det")
    started = ws.run("up", "-d", "--name", name, "--", "sh", "-c", PRINTS_ENV)
    try:
        assert started.returncode == 0, started.stderr.decode()
        _until_exited(ws, name)
        assert inspect(name)["HostConfig"]["LogConfig"]["Type"] == "none"
        assert_no_leak(_engine_log(name), canary, "docker logs of a detached job")
        deadline = time.monotonic() + 30
        while True:  # the runner's copy is complete once the job's output has ended
            shown = ws.run("logs", name)
            if b"job-done" in shown.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert shown.returncode == 0, shown.stderr.decode()
        assert f"HF_TOKEN=***\n".encode() in shown.stdout, shown.stdout
        assert b"job-done\n" in shown.stdout
        assert_no_leak(shown.stdout + shown.stderr, canary, "primus-runner logs of a detached job")
        down = ws.run("down", name)
        assert down.returncode == 0, down.stderr.decode()
        kept = ws.run("logs", name)  # the masked copy outlives the container
        assert b"HF_TOKEN=***\n" in kept.stdout, (kept.stdout, kept.stderr)
    finally:
        ws.run("down", name)
        force_remove(name)
    for path, data in _state_files(tmp_path).items():
        assert_no_leak(data, canary, path)


@pytest.mark.engines("docker", "podman")
def test_a_kept_job_leaves_no_log_with_the_engine_and_logs_by_name_shows_its_masked_copy(tmp_path, canary, engine_host, busybox_image):
    ws = _workspace(tmp_path, canary, engine_host)
    name = unique("out-keep")
    try:
        done = ws.run("up", "--keep", "--name", name, "--", "sh", "-c", PRINTS_ENV)
        assert done.returncode == 0, done.stderr.decode()
        assert inspect(name)["HostConfig"]["LogConfig"]["Type"] == "none"
        assert_no_leak(_engine_log(name), canary, "docker logs of a kept job")
        shown = ws.run("logs", name)
        assert shown.returncode == 0, shown.stderr.decode()
        assert b"HF_TOKEN=***\n" in shown.stdout and b"job-done\n" in shown.stdout, shown.stdout
        assert_no_leak(shown.stdout + shown.stderr, canary, "primus-runner logs of a kept job")
    finally:
        force_remove(name)


@pytest.mark.engines("docker", "podman")
def test_audit_of_a_container_started_outside_the_runner_finds_the_secret_in_its_engine_log(tmp_path, canary, engine_host, busybox_image):
    """The container's command holds the value only as octal escapes (no form the masker knows), its
    environment not at all: only its output, in the engine's log, holds it."""
    ws = _workspace(tmp_path, canary, engine_host)
    name = unique("out-audit")
    escaped = "".join(f"\\{byte:03o}" for byte in canary["HF_TOKEN"].encode())
    try:
        subprocess.run(["docker", "run", "-d", "--name", name, busybox_image, "sh", "-c", f"printf 'token: {escaped}\\n'"],
                       check=True, capture_output=True, timeout=60)
        subprocess.run(["docker", "wait", name], check=True, capture_output=True, timeout=60)
        assert canary["HF_TOKEN"].encode() in _engine_log(name)  # the planted leak is there
        found = ws.run("--json", "audit", name)
        assert_no_leak(found.stdout + found.stderr, canary, "audit output")
        assert found.returncode == 4, found.stderr.decode()
        doc = json.loads(found.stdout)
        assert {"secret": "HF_TOKEN", "location": f"container {name}: engine log:1"} in doc["findings"], doc
    finally:
        force_remove(name)
