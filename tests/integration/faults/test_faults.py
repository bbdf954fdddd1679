"""Faults injected into real engines: each gives the right exit code, a message that says
what happened, no container left behind, and no secret in anything printed."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from docker_helpers import LABEL_JOB, Workspace, containers, force_remove, read_until, tracker_config, unique
from engine_fixtures import assert_no_leak, start_mlflow_server, stop_process_group


@pytest.fixture
def ws(tmp_path, canary, busybox_image) -> Workspace:
    return Workspace(tmp_path, canary)


def no_container(name: str) -> None:
    assert containers(f"{LABEL_JOB}={name}") == [], f"container {name} left behind"


@pytest.mark.docker
def test_image_deleted_between_plan_and_start(ws, canary, docker_client, busybox_image):
    tag = f"primus-test/doomed:{unique()}"
    docker_client.images.get(busybox_image).tag(tag)
    planned = ws.run("plan", "--image", tag, "--", "true")
    assert planned.returncode == 0, planned.stderr
    docker_client.images.remove(tag)
    name = unique("doomed")
    result = ws.run("up", "--pull", "never", "--image", tag, "--name", name, "--", "true")
    err = result.stderr.decode()
    assert result.returncode == 2, err  # nothing launched; the default policy would try to pull it
    assert tag in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err
    no_container(name)
    assert_no_leak(result.stdout + result.stderr, canary, "up output")


@pytest.mark.docker
def test_container_killed_from_outside(ws, canary):
    name = unique("victim")
    proc = ws.popen("up", "--name", name, "--", "sh", "-c", 'echo "ready $HF_TOKEN"; sleep 60')
    try:
        first = read_until(proc, b"ready")
        subprocess.run(["docker", "kill", name], check=True, capture_output=True)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        force_remove(name)
    assert proc.returncode == 137, err.decode()
    assert b"137" in err or b"killed" in err.lower(), err.decode()
    assert b"Traceback" not in err
    no_container(name)
    assert_no_leak(first + rest + err, canary, "up output")


@pytest.mark.docker
@pytest.mark.parametrize("command", [["up", "--", "true"], ["check"], ["ps"], ["down", "--all"]])
def test_daemon_unreachable_exits_1_with_how_to_start_it(ws, canary, command):
    result = ws.run(*command, env={"DOCKER_HOST": f"unix://{ws.root}/no-daemon.sock"})
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "Traceback" not in err and "start" in err.lower(), err
    assert_no_leak(result.stdout + result.stderr, canary, f"{command[0]} output")


@pytest.fixture
def read_only(ws):
    """HOME and the cache dir as read-only bind mounts (root ignores file modes, not ro mounts)."""
    mounted = []
    for path in (ws.home, ws.cache):
        (path / "probe").mkdir(exist_ok=True)
        done = subprocess.run(["mount", "--bind", "-o", "ro", str(path), str(path)], capture_output=True)
        if done.returncode != 0:
            from engine_fixtures import engine_missing

            engine_missing("a read-only bind mount (needs root)", done.stderr.decode())
        mounted.append(path)
    yield ws
    for path in reversed(mounted):
        subprocess.run(["umount", str(path)], capture_output=True)


@pytest.mark.docker
def test_read_only_home_and_cache(read_only, canary):
    ws = read_only
    with pytest.raises(OSError):
        (ws.cache / "probe" / "x").write_text("x")  # the fault is real
    planned = ws.run("--json", "plan", "--", "true")
    assert planned.returncode == 0, planned.stderr
    checked = ws.run("check")
    assert checked.returncode == 0, checked.stderr
    name = unique("ro")
    ran = ws.run("up", "--name", name, "--", "sh", "-c", "echo ran")
    assert ran.returncode == 0, ran.stderr
    assert b"ran" in ran.stdout
    no_container(name)
    for result in (planned, checked, ran):
        assert b"Traceback" not in result.stderr
        assert_no_leak(result.stdout + result.stderr, canary, "output with a read-only home")


MLFLOW_CONFIG = tracker_config("  disable_mlflow: false\n", image="primus-test/busybox:latest")


@pytest.mark.docker
@pytest.mark.mlflow
def test_mlflow_server_dies_mid_run(tmp_path, canary, busybox_image, mlflow_server):
    """The job keeps its own exit code; the lost tracker is a warning, not a crash."""
    server, proc_server = start_mlflow_server(tmp_path / "mlflow")
    ws = Workspace(tmp_path / "ws", canary, MLFLOW_CONFIG).without_host_trackers()
    ws.env["MLFLOW_TRACKING_URI"] = str(server)
    name = unique("mlf")
    proc = ws.popen("up", "--name", name, "--", "sh", "-c", "echo ready; sleep 3; exit 7")
    try:
        first = read_until(proc, b"ready", timeout=120)
        stop_process_group(proc_server, grace=2)
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        force_remove(name)
        stop_process_group(proc_server, grace=1)
    assert proc.returncode == 7, err.decode()
    # "MLflow run '...'" is printed whenever up starts: assert the warning about the lost server itself.
    assert b"MLflow: could not close run" in err and b"Traceback" not in err, err.decode()
    no_container(name)
    assert_no_leak(first + rest + err, canary, "up output")


WEIRD = "a\"b'c $(id) `id` ${HOME} ; rm -rf / | && \\ \t tab\nsecond line\n\u00e9\u4e2d"


@pytest.mark.docker
def test_weird_values_reach_the_job_byte_for_byte(ws, canary, python_image):
    """Newlines, quotes, $(), backticks: forwarded exactly, never interpreted by any shell."""
    secret = canary["HF_TOKEN"] + WEIRD  # a secret with the same bytes goes through the stdin shim
    job = (
        "import os, hashlib, sys\n"
        "for n in ('PRIMUS_WEIRD', 'ALLOWED_VAR', 'HF_TOKEN'):\n"
        "    v = os.environb[n.encode()]\n"
        "    print(n, v.hex() if n != 'HF_TOKEN' else hashlib.sha256(v).hexdigest())\n"
    )
    result = ws.run(
        "up", "--image", python_image, "--name", unique("weird"), "--", "python3", "-c", job,
        env={"PRIMUS_WEIRD": WEIRD, "ALLOWED_VAR": WEIRD, "HF_TOKEN": secret},
    )
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert f"PRIMUS_WEIRD {WEIRD.encode().hex()}" in lines
    assert f"ALLOWED_VAR {WEIRD.encode().hex()}" in lines
    assert f"HF_TOKEN {hashlib.sha256(secret.encode()).hexdigest()}" in lines
    assert_no_leak(result.stdout + result.stderr, [secret, *canary.values()], "up output")
