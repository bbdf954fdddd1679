"""ROCm GPUs from the KFD topology under a host root; a damaged topology is one clear error."""

from __future__ import annotations

import pytest

from cli_runner import run_cli
from gpu_tree import amd_uuid, write_tree
from runner.gpus import GpuError, discover
from runner.gpus import rocm


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


def test_kfd_nodes_are_taken_in_numeric_order_cpu_nodes_skipped(tmp_path):
    write_tree(tmp_path, amd=8, cpu_nodes=3)  # GPU nodes 3..10: "10" sorts before "3" as text
    gpus = discover("rocm", str(tmp_path))
    assert [g.index for g in gpus] == list(range(8))
    assert [g.node for g in gpus] == list(range(3, 11))
    assert [g.render for g in gpus] == [f"/dev/dri/renderD{128 + i}" for i in range(8)]
    assert [g.uuid for g in gpus] == [amd_uuid(i) for i in range(8)]


def test_card_node_comes_from_the_pci_device_not_from_the_render_minor(tmp_path):
    write_tree(tmp_path, amd=2, card_offset=1)  # card0 is a BMC's VGA
    gpus = discover("rocm", str(tmp_path))
    assert [(g.render, g.card) for g in gpus] == [("/dev/dri/renderD128", "/dev/dri/card1"), ("/dev/dri/renderD129", "/dev/dri/card2")]


def test_pci_address_and_numa_node(tmp_path):
    write_tree(tmp_path, amd=4)
    gpus = discover("rocm", str(tmp_path))
    assert [g.pci for g in gpus] == ["0000:11:00.0", "0000:21:00.0", "0000:31:00.0", "0000:41:00.0"]
    assert [g.numa for g in gpus] == [0, 0, 1, 1]
    assert rocm.pci_address({"domain": 1, "location_id": (0xC1 << 8) | (3 << 3) | 2}) == "0001:c1:03.2"


def test_partitions_are_gpus_of_their_own(tmp_path):
    write_tree(tmp_path, amd=1, partitions=8)  # MI300X in CPX mode: 8 render nodes on one device
    gpus = discover("rocm", str(tmp_path))
    assert [g.render for g in gpus] == [f"/dev/dri/renderD{128 + i}" for i in range(8)]
    assert len({g.uuid for g in gpus}) == 8


@pytest.mark.parametrize("text, needle", [
    ("simd_count 4\ndrm_render_minor x128\n", "line 2"),
    ("simd_count 4\n", "no drm_render_minor"),
    ("simd_count 4\ndrm_render_minor 7\n", "is not 128"),
])
def test_a_malformed_topology_file_is_one_clear_error(tmp_path, text, needle):
    write_tree(tmp_path, amd=1)
    (tmp_path / "sys/class/kfd/kfd/topology/nodes/3/properties").write_text(text)
    with pytest.raises(GpuError) as err:
        discover("rocm", str(tmp_path))
    assert needle in err.value.message and "nodes/3/properties" in err.value.message


def test_an_unreadable_topology_file_is_one_clear_error(tmp_path):
    write_tree(tmp_path, amd=1)
    prop = tmp_path / "sys/class/kfd/kfd/topology/nodes/3/properties"
    prop.unlink()
    prop.mkdir()  # unreadable as a file, also for root
    with pytest.raises(GpuError, match="cannot read the KFD topology file"):
        discover("rocm", str(tmp_path))


def test_no_topology_means_no_gpu(tmp_path):
    assert discover("rocm", str(tmp_path)) == [] and discover("cuda", str(tmp_path)) == []
