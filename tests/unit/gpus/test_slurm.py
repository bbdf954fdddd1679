"""A Slurm step's allocation mapped to the node's devices (gres.conf order, else vendor order)."""

from __future__ import annotations

import pytest

from gpu_tree import write_tree
from runner.gpus import GpuError, discover
from runner.gpus import slurm


def test_step_gpus_first_then_job_gpus_then_the_runtime_variable():
    env = {"SLURM_JOB_ID": "7", "SLURM_STEP_GPUS": "2,3", "SLURM_JOB_GPUS": "0,1,2,3", "ROCR_VISIBLE_DEVICES": "9"}
    assert slurm.allocated(env, "rocm") == [2, 3]
    del env["SLURM_STEP_GPUS"]
    assert slurm.allocated(env, "rocm") == [0, 1, 2, 3]
    del env["SLURM_JOB_GPUS"]
    assert slurm.allocated(env, "rocm") == [9]
    assert slurm.allocated({"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "1"}, "cuda") == [1]
    assert slurm.allocated({"SLURM_JOB_ID": "7"}, "rocm") is None
    assert slurm.allocated({"SLURM_STEP_GPUS": "1"}, "rocm") is None  # not a Slurm step
    with pytest.raises(GpuError, match="not the gres indices"):
        slurm.allocated({"SLURM_JOB_ID": "7", "SLURM_STEP_GPUS": "GPU-1"}, "rocm")


def test_gres_conf_per_node_with_ranges(tmp_path):
    conf = tmp_path / "gres.conf"
    conf.write_text("# comment\nNodeName=n1 Name=gpu File=/r/dev/dri/renderD[128-131]\n"
                    "NodeName=n[2-3] Name=gpu File=/r/dev/dri/renderD[132-133,135]\nNodeName=n2 Name=nic File=/dev/x\n")
    assert slurm.gres_files("n1", str(conf)) == [f"/r/dev/dri/renderD{m}" for m in (128, 129, 130, 131)]
    assert slurm.gres_files("n2", str(conf)) == [f"/r/dev/dri/renderD{m}" for m in (132, 133, 135)]
    assert slurm.gres_files("n9", str(conf)) == []
    assert slurm.gres_files("n1", str(tmp_path / "absent")) == []


def test_gres_index_is_the_nodes_file_not_the_hosts_gpu_index(tmp_path):
    found = discover("rocm", str(write_tree(tmp_path, amd=8)))
    files = [f"/x/dev/dri/renderD{m}" for m in (132, 133, 134, 135)]
    assert [g.index for g in slurm.node_gpus([0, 1], found, files, "n2")] == [4, 5]
    assert [g.index for g in slurm.node_gpus([2, 3], found, [], "n1")] == [2, 3]  # no File lines: vendor order
    with pytest.raises(GpuError, match="gres.conf lists 4"):
        slurm.node_gpus([4], found, files, "n2")
    with pytest.raises(GpuError, match="no GPU this node's topology lists"):
        slurm.node_gpus([0], found, ["/dev/dri/renderD200"], "n2")


def test_cuda_gres_files_map_by_device_minor(tmp_path):
    found = discover("cuda", str(write_tree(tmp_path, amd=0, nvidia=4)))  # minors 3,2,1,0
    assert [g.index for g in slurm.node_gpus([0], found, ["/dev/nvidia0"], "n1")] == [3]
