"""`exec NAME -- CMD` into a running runner container: the command's exit code, its output masked,
only the caller's runner containers, never a secret on the exec's command line."""

from __future__ import annotations

import uuid

import pytest

from cli_runner import run_cli

pytestmark = pytest.mark.docker

CANARY = "canary-ux-exec-7f3a9c1e55"


def runner(cwd, *args, **env):
    return run_cli(cwd, "--trust-project", *args, env=env)


def test_exec_into_a_running_job(docker_client, busybox_image, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "f").write_text(f"token {CANARY} end\n")
    (tmp_path / ".primus.yaml").write_text(f"container:\n  gpu: none\n  options:\n    image: {busybox_image}\n    env: [UX_TOKEN]\n")
    name = f"ux-exec-{uuid.uuid4().hex[:8]}"
    started = runner(tmp_path, "up", "-d", "--name", name, "-v", f"{data}:/data", "--", "sleep", "120", UX_TOKEN=CANARY)
    assert started.returncode == 0, started.stderr
    try:
        result = runner(tmp_path, "exec", name, "--", "sh", "-c", "cat /data/f; echo to-stderr >&2; exit 7", UX_TOKEN=CANARY)
        assert result.returncode == 7, result.stderr
        assert "token *** end" in result.stdout and CANARY not in result.stdout + result.stderr
        assert "to-stderr" in result.stderr
        refused = runner(tmp_path, "exec", name, "--", "echo", CANARY, UX_TOKEN=CANARY)
        assert refused.returncode == 2 and CANARY not in refused.stdout + refused.stderr
        other = docker_client.containers.run(busybox_image, ["sleep", "60"], name=f"{name}-plain", detach=True)
        try:
            foreign = runner(tmp_path, "exec", other.name, "--", "true")
            assert foreign.returncode == 1 and "not a primus-runner container" in foreign.stderr
        finally:
            other.remove(force=True)
    finally:
        runner(tmp_path, "down", name)
