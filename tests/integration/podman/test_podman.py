"""Podman as an engine: where it differs from Docker behind the same API, and rootless Podman.

The Docker integration tests (test_docker_up, _lifecycle, test_security_docker, and
test_contract_docker, whose launch-options contract checks Podman's own names) also run
against rootful Podman through ``engine_host``; this file holds what is Podman's own:
discovery and ``describe``, the differences the engine layer handles (OOM reporting, forced
remove, name conflicts, image names, CUDA through CDI), and one launch with a secret as an
unprivileged user against rootless Podman. Engines: ``bash .ci/setup-podman.sh``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from docker_helpers import CONFIG, unique
from engine_fixtures import PODMAN_SETUP_HINT, PODMAN_SOCKET, assert_no_leak, engine_missing, sha, unix_http

pytestmark = [pytest.mark.docker, pytest.mark.podman, pytest.mark.engines("podman")]

REPO = Path(__file__).resolve().parents[3]
ROOTLESS_USER = "primus-rootless"
ROOTLESS_RUNTIME = Path("/run/primus-rootless")
ROOTLESS_PYTHON = Path("/opt/primus-rootless-venv/bin/python")


@pytest.fixture
def eng(engine_host):
    from runner.clients.engine_api import Engine

    return Engine(host=engine_host.host)


# ------------------------------------------------------------------ discovery, describe


def test_discovery_finds_rootful_podman_and_describe_names_it(engine_host):
    from runner.clients.engine_api import Engine, discover

    env = {"HOME": "/nonexistent", "XDG_RUNTIME_DIR": "/nonexistent"}
    loc = discover("podman", env)
    assert (loc.kind, loc.url, loc.source) == ("podman", f"unix://{PODMAN_SOCKET}", "rootful Podman socket")
    info = Engine(location=loc).describe()
    assert info["engine"] == "podman" and info["version"].startswith("4.") and info["api_version"] == "1.41"
    assert info["source"] == "rootful Podman socket"
    # DOCKER_HOST at Podman's socket (what the parametrised Docker tests do): Podman too.
    assert discover("auto", {**env, "DOCKER_HOST": engine_host.host}).kind == "podman"


# ------------------------------------------------------------------ differences the engine layer handles


def _run_to_end(eng, name: str, config: dict) -> tuple[str, int]:
    cid = eng.create(name, {"Image": "primus-test/busybox:latest", **config})
    eng.start(cid)
    return cid, eng.wait(cid)


def test_oom_kill_is_reported_even_where_podman_cannot_see_it(eng):
    """conmon misses OOM kills on a hybrid cgroup host (State.OOMKilled stays false):
    ``exit_cause`` then says "oom-likely" for a SIGKILL under a memory limit, and "killed"
    for a SIGKILL without one."""
    name = unique("oom")
    cid, code = _run_to_end(eng, name, {"Cmd": ["dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"],
                                        "HostConfig": {"Memory": 16 * 1024 * 1024}})
    try:
        assert code == 137
        cause = eng.exit_cause(cid, code)
        reported = (eng.inspect(cid).get("State") or {}).get("OOMKilled")
        assert cause == ("oom" if reported else "oom-likely")
    finally:
        eng.remove(cid)
    name = unique("killed")
    cid = eng.create(name, {"Image": "primus-test/busybox:latest", "Cmd": ["sleep", "60"]})
    try:
        eng.start(cid)
        eng.kill(cid)
        code = eng.wait(cid)
        assert code == 137 and eng.exit_cause(cid, code) == "killed"
        assert eng.exit_cause(cid, 0) is None
    finally:
        eng.remove(cid)


def test_forced_remove_does_not_wait_for_the_stop_timeout(eng):
    """Podman's forced remove stops with the container's StopTimeout first (Docker kills):
    ``Engine.remove`` kills before removing, so a job that ignores SIGTERM goes at once."""
    cid = eng.create(unique("rm"), {"Image": "primus-test/busybox:latest", "Cmd": ["sh", "-c", "trap '' TERM; sleep 600"],
                                    "StopTimeout": 600})
    eng.start(cid)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (eng.remove(cid), done.set()), daemon=True)
    worker.start()
    worker.join(120)  # far below the 600 s a stop-first remove would take
    try:
        assert done.is_set(), "remove waited for the stop timeout"
        from runner.clients.engine_api import ApiError

        with pytest.raises(ApiError) as info:
            eng.inspect(cid)
        assert info.value.status == 404
    finally:
        if not done.is_set():
            subprocess.run(["podman", "rm", "-f", "-t", "0", cid], capture_output=True)


def test_kill_of_a_stopped_container_and_a_name_conflict_read_as_on_docker(ws, eng):
    from runner.clients.engine_api import ApiError

    name = unique("twice")
    cid, _ = _run_to_end(eng, name, {"Cmd": ["true"]})
    try:
        eng.kill(cid)  # Podman: 500 "container state improper" (Docker: 409), both ignored
        with pytest.raises(ApiError) as info:
            eng.create(name, {"Image": "primus-test/busybox:latest", "Cmd": ["true"]})
        assert info.value.status == 409  # Podman says 500 "name is already in use"
        again = ws.run("up", "--name", name, "--", "true")
        assert again.returncode == 3 and b"already exists" in again.stderr, again.stderr.decode()
    finally:
        eng.remove(cid)


def test_cuda_is_rendered_as_cdi_for_podman(eng):
    """Podman 4's compat create silently drops DeviceRequests (a CUDA job would run without
    GPUs), so a body with CDI devices goes through Podman's own create, where the CDI name
    ``nvidia.com/gpu=all`` resolves (no spec here names ``all``: it says so at start)."""
    from runner.clients.engine_api import ApiError
    from runner.clients.engine_api.types import gpu_host_config

    cid = eng.create(unique("gpus"), {"Image": "primus-test/busybox:latest", "Cmd": ["true"],
                                      "HostConfig": gpu_host_config("nvidia", "docker")})
    try:
        host = eng.inspect(cid)["HostConfig"]
        assert not host.get("DeviceRequests") and not host.get("Devices")  # accepted, then ignored
    finally:
        eng.remove(cid)
    created = eng.create(unique("cdi"), {"Image": "primus-test/busybox:latest", "Cmd": ["true"],
                                         "HostConfig": gpu_host_config("nvidia", eng.kind)})
    try:
        with pytest.raises(ApiError) as info:
            eng.start(created)
        assert "unresolvable CDI devices nvidia.com/gpu=all" in info.value.message
    finally:
        eng.remove(created)


# ------------------------------------------------------------------ rootless Podman


@pytest.fixture
def rootless(tmp_path):
    """Rootless Podman's API as ROOTLESS_USER on $XDG_RUNTIME_DIR/podman/podman.sock, started
    here and stopped at the end; yields a function running a command as that user."""
    if not (ROOTLESS_PYTHON.exists() and ROOTLESS_RUNTIME.is_dir() and shutil.which("runuser")):
        engine_missing("rootless Podman (user, venv, runtime dir)", f"{ROOTLESS_PYTHON} or {ROOTLESS_RUNTIME} missing", PODMAN_SETUP_HINT)
    base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": f"/home/{ROOTLESS_USER}", "XDG_RUNTIME_DIR": str(ROOTLESS_RUNTIME)}

    def as_user(*argv, env=None, cwd=None, timeout=120):
        full = ["runuser", "-u", ROOTLESS_USER, "--", "env", "-i", *[f"{k}={v}" for k, v in {**base, **(env or {})}.items()], *argv]
        return subprocess.run(full, capture_output=True, timeout=timeout, cwd=cwd)

    sock = ROOTLESS_RUNTIME / "podman" / "podman.sock"
    as_user("mkdir", "-p", str(sock.parent))
    service = subprocess.Popen(
        ["runuser", "-u", ROOTLESS_USER, "--", "env", "-i", *[f"{k}={v}" for k, v in base.items()],
         "podman", "system", "service", "--time=0", f"unix://{sock}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 30
    answered = False
    while time.monotonic() < deadline and service.poll() is None:
        try:
            answered = unix_http(str(sock), "/_ping")[0] == 200
        except OSError:
            answered = False
        if answered:
            break
        time.sleep(0.2)
    if not answered:
        service.kill()
        err = service.stderr.read().decode(errors="replace")[-500:]
        engine_missing("rootless Podman's API", f"podman system service as {ROOTLESS_USER}: {err}", PODMAN_SETUP_HINT)
    work = Path(tempfile.mkdtemp(prefix="primus-rootless-"))
    shutil.chown(work, ROOTLESS_USER, ROOTLESS_USER)
    as_user.work = work
    try:
        yield as_user
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        try:
            service.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(service.pid, signal.SIGKILL)
            service.wait(5)
        shutil.rmtree(work, ignore_errors=True)


def test_rootless_podman_launch_with_a_secret_as_an_unprivileged_user(rootless, canary):
    """No DOCKER_HOST: discovery finds the user's rootless socket (the Docker and rootful
    Podman sockets refuse this user). ``--network host``: slirp4netns needs /dev/net/tun,
    which these machines refuse; ``--ipc private``: they have no /dev/mqueue for ``--ipc host``."""
    work = rootless.work
    (work / ".primus.yaml").write_text(CONFIG)
    shutil.chown(work / ".primus.yaml", ROOTLESS_USER, ROOTLESS_USER)
    env = {"PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(work / "cache"), "NO_COLOR": "1", "HF_TOKEN": canary["HF_TOKEN"]}
    probe = rootless(str(ROOTLESS_PYTHON), "-c", "import json; from runner.clients.engine_api import Engine; print(json.dumps(Engine().describe()))",
                     env=env, cwd=work)
    assert probe.returncode == 0, probe.stderr.decode()
    info = json.loads(probe.stdout)
    assert (info["engine"], info["source"]) == ("podman", "rootless Podman socket")
    assert info["host"] == f"unix://{ROOTLESS_RUNTIME}/podman/podman.sock"
    name = unique("rootless")
    job = 'echo "sha=$(printf %s "$HF_TOKEN" | sha256sum | cut -d" " -f1)"; echo "value=$HF_TOKEN"; cat /proc/self/uid_map'
    result = rootless(str(ROOTLESS_PYTHON), "-m", "runner", "up", "--keep", "--name", name, "--network", "host", "--ipc", "private",
                      "--env", "HF_TOKEN", "--", "sh", "-c", job, env=env, cwd=work)
    try:
        assert result.returncode == 0, result.stderr.decode()
        out = result.stdout.decode().splitlines()
        assert f"sha={sha(canary['HF_TOKEN'])}" in out and "value=***" in out
        uid_map = [line.split() for line in out if line.strip() and line.split()[0].isdigit()]
        assert uid_map and uid_map[0][:2] != ["0", "0"], uid_map  # root in the job is the user outside: rootless
        assert_no_leak(result.stdout + result.stderr, canary, "rootless up output")
        inspected = rootless("podman", "inspect", name)
        assert inspected.returncode == 0, inspected.stderr.decode()
        assert_no_leak(inspected.stdout, canary, "podman inspect (rootless)")
        for path in work.rglob("*"):
            if path.is_file():
                assert_no_leak(path.read_bytes(), canary, str(path))
    finally:
        down = rootless(str(ROOTLESS_PYTHON), "-m", "runner", "down", name, env=env, cwd=work)
        assert down.returncode == 0, down.stderr.decode()
