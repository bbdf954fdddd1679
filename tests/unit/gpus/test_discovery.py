"""Discovery by flavor (runner.gpus.discovery): the flavor picks the vendor's tree and only that
one, on a host root holding both vendors' GPUs; a flavor without GPUs finds none."""

from __future__ import annotations

import pytest

from gpu_tree import amd_uuid, nvidia_uuid, write_tree
from runner.gpus.discovery import discover


@pytest.fixture
def both(tmp_path):
    write_tree(tmp_path, amd=2, nvidia=3)
    return str(tmp_path)


def test_rocm_reads_only_the_kfd_topology_and_cuda_only_the_nvidia_driver(both):
    rocm = discover("rocm", both)
    assert [(g.vendor, g.index, g.uuid) for g in rocm] == [("amd", i, amd_uuid(i)) for i in range(2)]
    cuda = discover("cuda", both)
    assert [(g.vendor, g.index, g.uuid) for g in cuda] == [("nvidia", i, nvidia_uuid(i)) for i in range(3)]


@pytest.mark.parametrize("flavor", ["none", "", "ROCM", "cpu"])
def test_a_flavor_without_gpus_finds_none_even_on_a_gpu_host(both, flavor):
    assert discover(flavor, both) == []


def test_a_vendor_the_host_does_not_have_is_no_gpus(tmp_path):
    write_tree(tmp_path, amd=0, nvidia=2)
    assert discover("rocm", str(tmp_path)) == []
    assert len(discover("cuda", str(tmp_path))) == 2
