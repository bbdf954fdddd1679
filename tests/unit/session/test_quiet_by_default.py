"""Quiet by default, detail on request: notices once and only when they matter, -q, --verbose."""

from __future__ import annotations

import shutil

import pytest

from cli_runner import run_cli
from ux_helpers import NO_DOCKER, REPO


def notices(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("notice:")]


def test_plan_on_the_repositorys_config_under_gpu_none_has_no_notice(tmp_path):
    shutil.copy(REPO / ".primus.yaml", tmp_path / ".primus.yaml")
    result = run_cli(tmp_path, "--verbose", "plan", "--gpu", "none", "--", "true")
    assert result.returncode == 0, result.stderr
    assert notices(result.stderr) == []
    assert "HF_TOKEN   (allowlist: unset)" in result.stdout  # still reported: in the plan itself


def test_rdma_notice_only_when_the_user_asks_for_infiniband(tmp_path):
    base = "container:\n  gpu: rocm\n  options:\n    image: busybox\n"
    (tmp_path / ".primus.yaml").write_text(base)
    assert not [n for n in notices(run_cli(tmp_path, "up", "--", "true", env={"DOCKER_HOST": NO_DOCKER}).stderr) if "infiniband" in n]
    (tmp_path / ".primus.yaml").write_text(base + "    device: [/dev/infiniband]\n")
    asked = run_cli(tmp_path, "up", "--", "true", env={"DOCKER_HOST": NO_DOCKER})
    rdma = [n for n in notices(asked.stderr) if "infiniband" in n]
    assert len(rdma) == 1 and ".primus.yaml:5" in rdma[0], asked.stderr
    quiet = run_cli(tmp_path, "up", "--gpu", "none", "--", "true", env={"DOCKER_HOST": NO_DOCKER})
    assert not [n for n in notices(quiet.stderr) if "infiniband" in n]


def test_the_unset_notice_names_only_the_users_names(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n    env: [MY_UNSET]\n")
    result = run_cli(tmp_path, "up", "--", "true", env={"DOCKER_HOST": NO_DOCKER})
    (unset,) = [n for n in notices(result.stderr) if "not set" in n]
    assert "MY_UNSET" in unset and "MASTER_ADDR" not in unset and "NODE_RANK" not in unset


def test_check_under_slurm_never_reports_names_slurm_computes(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n    env: [MASTER_ADDR, NODE_RANK, MY_UNSET]\n")
    result = run_cli(tmp_path, "check", "--engine", "slurm")
    assert "MY_UNSET" in result.stderr
    assert "MASTER_ADDR" not in result.stderr and "NODE_RANK" not in result.stderr, result.stderr


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_leaves_only_errors(tmp_path, where):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n    env: [MY_UNSET]\n"
                                          "    device: [/dev/null]\n")  # a device this host has: up refuses a missing one first
    argv = ["-q", "plan", "--", "true"] if where == "before" else ["plan", "-q", "--", "true"]
    result = run_cli(tmp_path, *argv)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "busybox" in result.stdout  # the command's own result stays
    launch = run_cli(tmp_path, *[a if a != "plan" else "up" for a in argv], env={"DOCKER_HOST": NO_DOCKER})
    assert launch.returncode == 1 and launch.stderr.startswith("error:") and "notice" not in launch.stderr, launch.stderr
    failing = run_cli(tmp_path, "--quiet", "plan", "--image", "Not Valid", "--", "true")
    assert failing.returncode == 2 and failing.stderr.startswith("error:"), failing.stderr


def test_plan_verbose_shows_files_and_sources(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n    env: [MY_UNSET]\n")
    plain = run_cli(tmp_path, "plan", "--", "true")
    verbose = run_cli(tmp_path, "plan", "--verbose", "--", "true")
    assert plain.returncode == verbose.returncode == 0
    assert verbose.stdout != plain.stdout
    assert str(tmp_path / ".primus.yaml") in verbose.stdout and "defaults.yaml" in verbose.stdout
    assert f"image = busybox   <- {tmp_path / '.primus.yaml'}:4" in verbose.stdout
    assert f"env MY_UNSET: not forwarded (unset)   <- allowlist, {tmp_path / '.primus.yaml'}:5" in verbose.stdout
