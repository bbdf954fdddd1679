"""NVIDIA GPUs from /proc/driver/nvidia under a host root: bus order, the device minor as read."""

from __future__ import annotations

import pytest

from gpu_tree import nvidia_uuid, write_tree
from runner.gpus import GpuError, discover


def test_nvidia_index_is_bus_order_and_the_minor_is_read(tmp_path):
    write_tree(tmp_path, amd=0, nvidia=4)
    gpus = discover("cuda", str(tmp_path))
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert [g.minor for g in gpus] == [3, 2, 1, 0]  # the device minor is not the index
    assert [g.uuid for g in gpus] == [nvidia_uuid(i) for i in range(4)]
    assert gpus[1].pci == "0000:27:00.0" and gpus[1].device_id == "1" and gpus[1].nodes == ("/dev/nvidia2",)


def test_malformed_nvidia_information_is_one_clear_error(tmp_path):
    write_tree(tmp_path, amd=0, nvidia=1)
    (tmp_path / "proc/driver/nvidia/gpus/0000:17:00.0/information").write_text("Model: X\n")
    with pytest.raises(GpuError, match="Device Minor"):
        discover("cuda", str(tmp_path))
