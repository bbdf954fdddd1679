"""The README's first command on a machine where no Docker or Podman answers: the demo runs the same
job on the process engine, says so and how to get containers, and still masks its secret."""

from __future__ import annotations

import base64

from cli_runner import run_cli
from ux_helpers import NO_DOCKER

CANARY = "canary-ux-demo-0b7e4d21c9"


def test_demo_falls_back_to_the_process_engine(tmp_path):
    result = run_cli(tmp_path, "demo", env={"DOCKER_HOST": NO_DOCKER, "DEMO_API_KEY": CANARY,
                                            "CONTAINER_HOST": "unix:///nonexistent/podman.sock"})
    assert result.returncode == 0, result.stderr
    assert "greeting (a literal from the config): hello from primus-runner" in result.stdout
    assert "the secret, as the job sees it: ***" in result.stdout and "DEMO_NOT_SET: absent" in result.stdout
    assert CANARY not in result.stdout + result.stderr
    assert base64.b64encode(CANARY.encode()).decode()[:16] not in result.stdout + result.stderr
    assert "process engine" in result.stderr and "rootless Podman" in result.stderr, result.stderr
