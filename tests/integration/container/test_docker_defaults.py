"""The built-in defaults run on a host like this one, and a daemon's refusal comes with the fix."""

from __future__ import annotations

import pytest

from docker_helpers import LABEL_JOB, Workspace, containers, unique

pytestmark = pytest.mark.docker

ONLY_IMAGE = "container:\n  options:\n    image: primus-test/busybox:latest\n"


def test_built_in_defaults_run_with_gpu_none(docker_client, tmp_path):
    ws = Workspace(tmp_path, config=ONLY_IMAGE)
    name = unique("defaults")
    result = ws.run("up", "--gpu", "none", "--name", name, "--", "sh", "-c", "echo ran with defaults")
    assert result.returncode == 0, result.stderr
    assert b"ran with defaults" in result.stdout
    assert containers(f"{LABEL_JOB}={name}") == []


@pytest.mark.parametrize(
    "option, hint",
    [("privileged: true", b"privileged: false"), ('ulimit: "nofile=1048576:1048576"', b"container.options.ulimit")],
)
def test_refused_option_exits_3_with_the_fix_and_leaves_nothing(docker_client, tmp_path, option, hint):
    ws = Workspace(tmp_path, config=ONLY_IMAGE + f"    {option}\n")
    name = unique("refused")
    result = ws.run("up", "--gpu", "none", "--name", name, "--", "true")
    assert b"Traceback" not in result.stderr
    if result.returncode != 0:  # this host (sandboxed dockerd) refuses it: exit 3 with the fix
        assert result.returncode == 3, result.stderr
        assert hint in result.stderr
    assert containers(f"{LABEL_JOB}={name}") == []  # either way, nothing is left behind
