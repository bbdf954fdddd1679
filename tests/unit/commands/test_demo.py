"""``demo``: the product end to end in one command. Where no Docker or Podman answers, the same job runs
on the process engine, says so and how to get containers, and still masks its secret; a project's own
files are never read."""

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


def test_the_demo_is_self_contained_a_projects_files_are_not_read(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container: [this is not a mapping\n")
    result = run_cli(tmp_path, "demo", env={"DOCKER_HOST": NO_DOCKER, "CONTAINER_HOST": "unix:///nonexistent/podman.sock"})
    assert result.returncode == 0, result.stderr
    assert "== job done ==" in result.stdout
