"""--gpus in the plan: the devices, the JSON, and every bad input refused (exit 2) before launch; then the
same decisions (device entries, visible-devices conflicts, privileged) asked of the module directly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_runner import run_cli
from gpu_tree import amd_uuid, write_tree


@pytest.fixture
def host(work, tmp_path_factory):
    return write_tree(tmp_path_factory.mktemp("host"), amd=8, nvidia=4)


def run(host, *args, env=None, config=None):
    environ = {"PRIMUS_RUNNER_HOST_ROOT": str(host), "PRIMUS_RUNNER_GPU_LEASES": str(host / "leases"),
               "DOCKER_HOST": "unix:///nonexistent.sock", **(env or {})}
    pre = ["--config", str(config)] if config else []
    return run_cli(Path.cwd(), *pre, *args, home=Path(os.environ["HOME"]), env=environ)


def plan_json(host, *args, **kw):
    result = run(host, "plan", "--json", "--image", "busybox", *args, "--", "true", **kw)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_subset_gets_kfd_and_exactly_its_render_and_card_nodes(host):
    doc = plan_json(host, "--gpu", "rocm", "--gpus", "4-5")
    assert doc["devices"] == [f"{host}/dev/kfd:/dev/kfd",
                              f"{host}/dev/dri/renderD132:/dev/dri/renderD132", f"{host}/dev/dri/card5:/dev/dri/card5",
                              f"{host}/dev/dri/renderD133:/dev/dri/renderD133", f"{host}/dev/dri/card6:/dev/dri/card6"]
    assert not any(d.endswith(":/dev/dri") or d == "/dev/dri" for d in doc["devices"])
    assert [(g["index"], g["devices"]) for g in doc["gpus"]] == [(4, ["/dev/dri/renderD132", "/dev/dri/card5"]),
                                                                 (5, ["/dev/dri/renderD133", "/dev/dri/card6"])]
    assert doc["env"]["GPUS_PER_NODE"] == "2"
    assert doc["labels"]["io.primus-runner.gpus"] == f"{amd_uuid(4)},{amd_uuid(5)}"


def test_cuda_gpus_carry_their_device_id(host):
    doc = plan_json(host, "--gpu", "cuda", "--gpus", "1,3")
    assert [(g["index"], g["device_id"]) for g in doc["gpus"]] == [(1, "1"), (3, "3")]
    assert not any("nvidia" in d for d in doc["devices"])


def test_config_gpus_and_the_text_plan(host, work):
    (work / ".primus.yaml").write_text("container:\n  gpus: 2\n")
    result = run(host, "plan", "--image", "busybox", "--", "true")
    assert result.returncode == 0, result.stderr
    assert "gpus      rocm 2: 0 (/dev/dri/renderD128" in result.stdout and "1 (/dev/dri/renderD129" in result.stdout  # plan's short view


@pytest.mark.parametrize("args, needle", [
    (("--gpus", "6-8"), "no rocm GPU 8 on this host (found 8: 0-7)"),
    (("--gpus", "device=8"), "no rocm GPU 8 on this host"),
    (("--gpus", "GPU-deadbeef"), "no rocm GPU has the UUID GPU-deadbeef"),
    (("--gpu", "none", "--gpus", "0"), "--gpu none runs without any"),
    (("--gpus", "0-3,3-5"), "the ranges overlap"),
    (("--gpus", "9"), "this host has 8 rocm GPUs"),
    (("--gpu", "cuda", "--gpus", "3-4"), "no cuda GPU 4"),
])
def test_bad_selection_exits_2_with_one_message(host, args, needle):
    result = run(host, "plan", "--image", "busybox", *args, "--", "true")
    assert result.returncode == 2 and needle in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_malformed_topology_exits_2(host):
    (host / "sys/class/kfd/kfd/topology/nodes/4/properties").write_text("simd_count four\n")
    result = run(host, "plan", "--image", "busybox", "--gpus", "0-1", "--", "true")
    assert result.returncode == 2 and "malformed KFD topology file" in result.stderr and "nodes/4/properties, line 1" in result.stderr


def test_privileged_with_a_subset_is_refused_with_the_fix(host, work):
    (work / ".primus.yaml").write_text("container:\n  options:\n    privileged: true\n")
    result = run(host, "plan", "--image", "busybox", "--gpus", "0-3", "--", "true")
    assert result.returncode == 2 and "privileged: true lifts every device limit" in result.stderr
    assert ".primus.yaml:3" in result.stderr and "privileged: false" in result.stderr
    assert run(host, "plan", "--image", "busybox", "--gpus", "all", "--", "true").returncode == 0


def test_a_forwarded_visible_devices_variable_is_a_conflict(host):
    result = run(host, "plan", "--image", "busybox", "--gpus", "4-5", "--env", "HIP_VISIBLE_DEVICES", "--", "true",
                 env={"HIP_VISIBLE_DEVICES": "4,5"})
    assert result.returncode == 2 and "HIP_VISIBLE_DEVICES is forwarded from the host" in result.stderr
    assert "--gpus" in result.stderr
    # the container's own numbering is harmless
    assert run(host, "plan", "--image", "busybox", "--gpus", "4-5", "--env", "HIP_VISIBLE_DEVICES=0,1", "--", "true").returncode == 0


def test_check_fails_for_a_flavor_whose_devices_are_absent(host, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run(empty, "check", "--gpu", "cuda", "--image", "busybox")
    assert result.returncode == 2 and "no cuda GPU on this host" in result.stderr
    result = run(empty, "check", "--gpu", "rocm", "--image", "busybox")
    assert result.returncode == 2 and "no rocm GPU on this host" in result.stderr


def test_check_lists_the_gpus_it_found(host):
    result = run(host, "check", "--json", "--gpu", "cuda", "--image", "busybox")
    doc = json.loads(result.stdout)
    assert [(g["index"], g["minor"], g["pci"], g["numa"]) for g in doc["gpus"]["found"]][:2] == [(0, 3, "0000:17:00.0", None), (1, 2, "0000:27:00.0", None)]
    assert not [p for p in doc["problems"] if "GPU" in p["message"]]
    text = run(host, "check", "--gpu", "rocm", "--image", "busybox").stderr
    assert "gpu 7: /dev/dri/renderD135  0x5A1C0FFEE0000007  pci 0000:81:00.0  numa 1" in text


def test_under_slurm_gpus_n_is_per_node_and_a_list_is_refused(host):
    script = run(host, "submit", "--dry-run", "--nodes", "2", "--image", "busybox", "--gpus", "2", "--", "true")
    assert script.returncode == 0, script.stderr
    assert "#SBATCH --gpus-per-node=2" in script.stdout
    flag = run(host, "submit", "--dry-run", "--image", "busybox", "--gpus", "2", "--gpus-per-node", "3", "--", "true")
    assert "#SBATCH --gpus-per-node=3" in flag.stdout
    listed = run(host, "submit", "--dry-run", "--image", "busybox", "--gpus", "0-3", "--", "true")
    assert listed.returncode == 2 and "Slurm chooses each node's GPUs" in listed.stderr
    forwarded = run(host, "submit", "--dry-run", "--image", "busybox", "--env", "ROCR_VISIBLE_DEVICES", "--", "true",
                    env={"ROCR_VISIBLE_DEVICES": "2"})
    assert forwarded.returncode == 2 and "ROCR_VISIBLE_DEVICES is forwarded from the host" in forwarded.stderr


def test_the_runner_set_gpus_per_node_is_not_reported_unset(host):
    """The runner sets GPUS_PER_NODE to the selection's size: it is forwarded, never "not set"."""
    doc = plan_json(host, "--gpus", "2")
    assert doc["env"].get("GPUS_PER_NODE") == "2", doc["env"]
    skipped = [entry["name"] for entry in doc["skipped"]]
    assert "MASTER_ADDR" in skipped and "GPUS_PER_NODE" not in skipped, skipped  # the others of its kind still are


def test_other_gpu_devices_from_config_give_way_to_the_selection(host, work):
    (work / ".primus.yaml").write_text("container:\n  options:\n    device: [/dev/dri/renderD140, /dev/fuse]\n")
    doc = plan_json(host, "--gpus", "1-1")
    assert "/dev/fuse" in doc["devices"]
    assert not [d for d in doc["devices"] if "renderD140" in d or d in ("/dev/dri", "/dev/kfd")]
    assert [d.split(":")[1] for d in doc["devices"] if d != "/dev/fuse"] == ["/dev/kfd", "/dev/dri/renderD129", "/dev/dri/card2"]


# ------------------------------------------------------------------ the same decisions, without the CLI

def test_a_subset_is_kfd_and_exactly_its_nodes_under_the_host_root(host):
    from runner.gpus import discover
    from runner.gpus.planning import device_specs

    gpus = discover("rocm", str(host))[2:4]
    specs = device_specs("rocm", gpus, str(host))
    assert specs == [f"{host}/dev/kfd:/dev/kfd"] + [f"{host}{p}:{p}" for g in gpus for p in g.nodes]
    assert device_specs("rocm", gpus, "/")[0] == "/dev/kfd" and device_specs("cuda", gpus, "/") == []


@pytest.mark.parametrize("spec, gpu", [("/dev/kfd", True), ("/dev/dri", True), ("/dev/dri/renderD128", True),
                                       ("/srv/host/dev/dri/card1:/dev/dri/card1", True), ("/dev/nvidia0", True),
                                       ("/dev/dri/../dri/renderD129", True), ("/srv/x:/dev/kfd:rwm", True), ("/dev/infiniband/uverbs0", False),
                                       ("/dev/kfd-not:/dev/x", False), ("/dev/fuse", False)])
def test_which_device_entries_are_gpus(spec, gpu):
    from runner.gpus.planning import is_gpu_device

    assert is_gpu_device(spec) is gpu


def test_privileged_with_a_subset_is_a_problem_and_with_all_it_is_not():
    from runner.gpus.planning import privileged_problem

    gpus = ("gpu",) * 2
    problem = privileged_problem(True, gpus, 8, ".primus.yaml:3")
    assert problem.where == ".primus.yaml:3" and "see all 8 GPUs, not the 2 chosen" in problem.message
    assert privileged_problem(True, ("gpu",) * 8, 8, None) is None and privileged_problem(False, gpus, 8, None) is None


def test_a_forwarded_visible_devices_variable_is_a_conflict_unless_it_is_the_jobs_own_numbering():
    from runner.gpus.planning import env_problems
    from runner.policy import EnvDecision

    def forwarded(name, value, reason="env"):
        return EnvDecision(name, True, False, reason, "env", value)

    assert env_problems([forwarded("HIP_VISIBLE_DEVICES", "0,1")], 2) == []  # what the job sees anyway
    [problem] = env_problems([forwarded("HIP_VISIBLE_DEVICES", "4,5")], 2)
    assert problem.message.startswith("HIP_VISIBLE_DEVICES is forwarded from the host (env)")
    assert len(env_problems([forwarded("NVIDIA_VISIBLE_DEVICES", "0")], 1)) == 1  # the toolkit's choice: always
    assert env_problems([forwarded("CUDA_VISIBLE_DEVICES", "3", reason="slurm")], None) == []  # set by the runner itself
    assert env_problems([EnvDecision("ROCR_VISIBLE_DEVICES", False, False, "env", "env", "3")], None) == []
