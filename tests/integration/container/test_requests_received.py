"""What the engine really received is the dry run's request, byte for byte.

Docker and Podman: ``up`` runs through a recording proxy in front of the real engine socket
(``loopback_servers``), and the create body it sent is compared, as bytes, with the dry run's
``--json`` request (``create``; Podman: ``libpod_create``, its own API's body) serialised as the
client serialises it. The only difference allowed is an id the dry run names as such
(``request.ids``: the run id, which each launch draws anew), replaced by the launch's own id
read from its run record. The process engine: the argv, environment and working directory the
child really got, read from ``/proc/self``, against the dry run's ``program``, ``command``,
``environment`` and ``workdir``.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from docker_helpers import Workspace, force_remove, unique
from engine_fixtures import PODMAN_SOCKET, assert_no_leak
from loopback_servers import RecordingProxy

DOCKER_SOCKET = "/var/run/docker.sock"


def _upstream(engine_host) -> str:
    return PODMAN_SOCKET if engine_host.kind == "podman" else DOCKER_SOCKET


def _launch_run_id(ws: Workspace, name: str) -> str:
    """The run id of the launch of ``name``, from its record (``runs --json``)."""
    listed = json.loads(ws.run("--json", "runs", "--name", name).stdout)
    runs = listed["runs"] if isinstance(listed, dict) else listed
    (run,) = [r for r in runs if r.get("name") == name]
    return run["id"]


@pytest.mark.parametrize("with_secret", [True, False], ids=["a-secret-through-the-shim", "no-secret"])
def test_the_create_body_the_engine_received_is_the_dry_runs(tmp_path, canary, busybox_image, engine_host, with_secret):
    ws = Workspace(tmp_path, canary)
    name = unique("golden")
    secret = ["--env", "HF_TOKEN"] if with_secret else []
    args = ["--name", name, *secret, "--memory", "256m", "--label", "team=golden", "--", "sh", "-c", "echo ok"]
    dry = ws.run("--json", "up", "--dry-run", *args, env=engine_host.env)
    assert dry.returncode == 0, dry.stderr.decode()
    shown = json.loads(dry.stdout)["request"]
    with RecordingProxy(_upstream(engine_host), str(tmp_path / "engine.sock")) as proxy:
        result = ws.run("up", *args, env={"DOCKER_HOST": proxy.url})
    force_remove(name)
    assert result.returncode == 0, result.stderr.decode()
    podman = engine_host.kind == "podman"
    path = "/libpod/containers/create" if podman else "/containers/create"
    (sent,) = [r.body for r in proxy.requests if r.method == "POST" and r.path.endswith(path)]
    expected = json.dumps(shown["libpod_create"] if podman else shown["create"]).encode()
    dry_id, launch_id = shown["ids"]["run"], _launch_run_id(ws, name)
    assert dry_id and launch_id and dry_id != launch_id  # each launch has its own run id: the one id allowed to differ
    assert expected.count(dry_id.encode()) == 1  # the run's label, nowhere else
    assert sent == expected.replace(dry_id.encode(), launch_id.encode())
    assert_no_leak(dry.stdout + dry.stderr + sent, canary, "the dry run and the create body")


def test_the_child_process_got_the_dry_runs_argv_environment_and_directory(tmp_path, canary):
    ws = Workspace(tmp_path, canary)
    seen = tmp_path / "seen.json"
    # /proc/self: what execve gave the child (Python's own locale coercion changes os.environ, not this)
    dump = ("import json, os; read = lambda f: open('/proc/self/' + f, 'rb').read().split(b'\\0')[:-1];"
            "env = dict(e.decode().split('=', 1) for e in read('environ'));"
            f"json.dump({{'argv': [a.decode() for a in read('cmdline')], 'env': env, 'cwd': os.getcwd()}}, open({str(seen)!r}, 'w'))")
    python = os.path.basename(sys.executable)
    args = ["--engine", "process", "--name", unique("golden-process"), "--env", "HF_TOKEN", "--", python, "-c", dump]
    env = {"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin"}  # where the runner finds the program
    dry = ws.run("--json", "up", "--dry-run", *args, env=env)
    assert dry.returncode == 0, dry.stderr.decode()
    shown = json.loads(dry.stdout)
    result = ws.run("up", *args, env=env)
    assert result.returncode == 0, result.stderr.decode()
    got = json.loads(seen.read_text())
    assert got["argv"] == [shown["program"], *shown["command"][1:]]
    assert got["cwd"] == shown["workdir"]
    secrets = sorted(k for k, v in shown["environment"].items() if v == "***")  # a secret is shown by name
    assert "HF_TOKEN" in secrets and set(secrets) == set(shown["secrets"])
    assert got["env"] == {**shown["environment"], **{k: canary[k] for k in secrets}}
    assert_no_leak(dry.stdout + dry.stderr, canary, "the process engine's dry run")
