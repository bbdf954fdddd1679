"""docker run's `--entrypoint`, `--label` and `--platform` on `up`, executed as `plan` renders them,
on Docker and on Podman (whose compatible create ignores a platform: the runner checks it)."""

from __future__ import annotations

import json
import subprocess

import pytest

from docker_helpers import Workspace, unique
from engine_fixtures import assert_no_leak

pytestmark = pytest.mark.docker


@pytest.fixture
def ws(tmp_path, busybox_image, engine_host):
    ws = Workspace(tmp_path)
    ws.env.update(engine_host.env)
    ws.cli = engine_host.cli
    ws.names = []
    yield ws
    if ws.names:
        subprocess.run([*engine_host.cli, "rm", "-f", *ws.names], capture_output=True)


def test_entrypoint_and_labels_reach_the_container_with_the_secret_through_the_shim(ws, canary):
    (ws.cwd / ".env").write_text(f"HF_TOKEN={canary['HF_TOKEN']}\n")
    name = unique("interactive")
    ws.names.append(name)
    result = ws.run("up", "--keep", "--name", name, "--entrypoint", "/bin/sh", "--label", "team=ml", "--label", "stage=dev",
                    "--", "-c", 'echo "entry=$0 token=$HF_TOKEN"')
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"entry=/bin/sh token=***\n", result.stdout
    info = json.loads(subprocess.run([*ws.cli, "inspect", name], capture_output=True, check=True).stdout)[0]
    labels = info["Config"]["Labels"]
    assert labels["team"] == "ml" and labels["stage"] == "dev" and labels["io.primus-runner.job"] == name
    assert info["Config"]["Entrypoint"][-1] == "/bin/sh" and info["Config"]["Entrypoint"][-2] == "primus-shim"
    assert_no_leak(json.dumps(info), {"HF_TOKEN": canary["HF_TOKEN"]}, "inspect")


def test_an_empty_entrypoint_runs_the_command_itself(ws):
    result = ws.run("up", "--entrypoint", "", "--", "echo", "cleared")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"cleared\n"


def test_platform_is_enforced_on_both_engines(ws):
    ok = ws.run("up", "--platform", "linux/amd64", "--", "echo", "amd64 ran")
    assert ok.returncode == 0, ok.stderr.decode()
    assert ok.stdout == b"amd64 ran\n"
    other = ws.run("up", "--platform", "linux/arm64", "--pull", "never", "--", "echo", "must not run")
    assert other.returncode == 2, other.stderr.decode()
    assert b"must not run" not in other.stdout
    assert b"is linux/amd64, not the requested platform linux/arm64" in other.stderr
