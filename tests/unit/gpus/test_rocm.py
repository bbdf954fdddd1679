"""A KFD topology `properties` file of binary junk (a damaged sysfs) is one exit-2 message naming the
node, the file and what to do, through the CLI: never an internal error."""

from __future__ import annotations

import pytest

from cli_runner import run_cli
from gpu_tree import write_tree


@pytest.mark.parametrize("command", [("plan", "--", "true"), ("up", "--", "true"), ("check",)])
def test_a_binary_topology_file_is_one_clear_error(tmp_path, command):
    root = write_tree(tmp_path / "host", amd=4, cpu_nodes=3)
    junk = root / "sys/class/kfd/kfd/topology/nodes/5/properties"  # the third GPU's node
    junk.write_bytes(bytes(range(256)) * 4)
    argv = [command[0], "--gpu", "rocm", "--gpus", "2-3", *command[1:]]
    result = run_cli(tmp_path, *argv, env={"PRIMUS_RUNNER_HOST_ROOT": str(root), "DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.returncode == 2, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    named = [line for line in result.stderr.splitlines() if "properties" in line]
    assert len(named) == 1, result.stderr
    assert f"the KFD topology file of node 5, {junk} is not text" in named[0]
    assert "reload the amdgpu driver" in named[0] and "--gpu none" in named[0]
