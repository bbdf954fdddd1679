"""The Gpu record (its device nodes, JSON and one-line description), the host root, and driver files."""

from __future__ import annotations

import pytest

from runner.gpus.model import Gpu, GpuError, driver_entries, driver_file, host_root, numa_node, under

AMD = Gpu(vendor="amd", index=2, uuid="GPU-aa", pci="0000:31:00.0", numa=1, render="/dev/dri/renderD130",
          card="/dev/dri/card3", minor=130, node=5)
NVIDIA = Gpu(vendor="nvidia", index=1, uuid="GPU-bb", pci="0000:27:00.0", minor=2)


def test_host_root_from_the_environment():
    assert host_root({}) == "/"
    assert host_root({"PRIMUS_RUNNER_HOST_ROOT": "/srv/host/"}) == "/srv/host"


def test_a_path_under_a_root():
    assert under("/", "/sys/class/kfd") == "/sys/class/kfd"
    assert under("/srv/host", "/sys/class/kfd") == "/srv/host/sys/class/kfd"


def test_amd_nodes_are_render_and_card_and_the_json_lists_them():
    assert AMD.flavor == "rocm" and AMD.nodes == ("/dev/dri/renderD130", "/dev/dri/card3")
    assert Gpu(vendor="amd", index=0, uuid="u", pci="p", render="/dev/dri/renderD128").nodes == ("/dev/dri/renderD128",)
    doc = AMD.to_dict()
    assert doc["devices"] == ["/dev/dri/renderD130", "/dev/dri/card3"] and "device_id" not in doc
    assert doc["index"] == 2 and doc["node"] == 5


def test_nvidia_node_is_its_minor_and_the_json_names_the_device_id():
    assert NVIDIA.flavor == "cuda" and NVIDIA.nodes == ("/dev/nvidia2",) and NVIDIA.device_id == "1"
    assert Gpu(vendor="nvidia", index=0, uuid="u", pci="p").nodes == ()
    doc = NVIDIA.to_dict()
    assert doc["device_id"] == "1" and "devices" not in doc


def test_describe_is_one_line_with_unknowns_as_question_marks():
    assert AMD.describe() == "2: /dev/dri/renderD130  GPU-aa  pci 0000:31:00.0  numa 1"
    assert NVIDIA.describe() == "1: minor 2  GPU-bb  pci 0000:27:00.0  numa ?"


def test_driver_directories_and_files(tmp_path):
    assert driver_entries(str(tmp_path / "absent")) is None  # no driver: no GPUs, not an error
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("text")
    assert driver_entries(str(tmp_path / "d")) == ["x"]
    assert driver_file(str(tmp_path / "d" / "x")) == "text"
    with pytest.raises(GpuError, match=r"cannot read the file .*/absent"):
        driver_file(str(tmp_path / "absent"), what="the file ")
    (tmp_path / "junk").write_bytes(b"ok\xff")
    with pytest.raises(GpuError) as err:
        driver_file(str(tmp_path / "junk"), hint="reload it")
    assert "is not text (byte 2 is not UTF-8)" in err.value.message and err.value.problems[0].hint == "reload it"


def test_numa_node_is_none_when_absent_negative_or_junk(tmp_path):
    pci = "0000:11:00.0"
    node = tmp_path / f"sys/bus/pci/devices/{pci}/numa_node"
    assert numa_node(str(tmp_path), pci) is None
    node.parent.mkdir(parents=True)
    for text, want in (("1\n", 1), ("-1\n", None), ("x\n", None)):
        node.write_text(text)
        assert numa_node(str(tmp_path), pci) == want
