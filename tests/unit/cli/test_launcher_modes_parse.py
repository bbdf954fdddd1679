"""Launcher modes through the CLI without an engine: the Slurm flag checks (nothing widens --export or
injects a directive), the dry runs of each entry, names and owner labels. (The modes' parsing is
tests/unit/cli/test_launcher_args.py, their translation test_launcher_translate.py, their run
tests/unit/commands/test_launcher.py.)"""

from __future__ import annotations

import json
import os

import pytest

from cli_runner import run_cli
from plan_factory import plan_from

from runner.options import LaunchFlags
from runner.plan import LABEL_OWNER

TRAIN = ["train", "pretrain", "--config", "exp.yaml"]


@pytest.fixture
def project(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n    name: primus-training\n")
    return tmp_path


@pytest.mark.parametrize("flags", [
    ["--export=ALL"],
    ["--export", "HF_TOKEN"],
    ["-p", "debug\n#SBATCH --export=ALL"],
    ["-t", "5 --export=ALL"],
    ["-A", "--export=ALL"],
    ["-o", "x\n#SBATCH --export=ALL"],
    ["--nodelist", "n1 --export=ALL"],
    ["-w", "n1\n#SBATCH --export=ALL"],
    ["--qos", "normal,--export=ALL"],
])
def test_slurm_flags_cannot_widen_export_or_inject(project, flags):
    result = run_cli(project, "--dry-run", "slurm", "sbatch", *flags, "--", *TRAIN)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "#SBATCH" not in result.stdout  # refused before any script was rendered


def test_dry_run_slurm_renders_the_flags_and_the_container_entry(project):
    """The user's Slurm flags reach sbatch's command line exactly as given (they beat the script's directives)."""
    import json

    flags = ["-N", "2", "-p", "debug", "-t", "5", "-w", "n[1-2]", "--qos", "normal", "-J", "my-job", "--exclusive",
             "--cpus-per-task=4", "-C", "mi300x", "--mail-type", "END", "--mail-user=me@example.com", "-A", "acct"]
    result = run_cli(project, "--json", "--dry-run", "slurm", *flags, "--", "container", "--gpus", "0", "--env", "LIT=1", "--", *TRAIN)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)["request"]
    command = doc["sbatch"]
    assert command[4:-1] == flags and command[0].endswith("sbatch")
    assert "#SBATCH --nodes=2" in doc["script"]
    assert "--export=ALL" not in result.stdout


def test_slurm_direct_entry_runs_the_direct_launcher_on_each_node(project):
    import json

    result = run_cli(project, "--json", "--dry-run", "slurm", "srun", "-N", "2", "--", "direct", "--single", "--", *TRAIN)
    assert result.returncode == 0, result.stderr
    request = json.loads(result.stdout)["request"]
    assert request["node_command"] == ["primus-cli", "direct", "--single", "--", *TRAIN]


def test_container_secret_literal_is_refused(project):
    result = run_cli(project, "--dry-run", "container", "--env", "HF_TOKEN=hf_literal_canary_5521", "--", *TRAIN)
    assert result.returncode == 2
    assert "hf_literal_canary_5521" not in result.stdout + result.stderr


def test_config_name_gets_a_per_job_suffix_and_a_cli_name_is_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    config = "container:\n  gpu: none\n  options:\n    image: busybox\n    name: primus-training\n"
    plan = plan_from(tmp_path, config, flags=LaunchFlags(gpu="none")).require()
    assert plan.job.name == f"primus-training-{os.getpid()}"
    assert dict(plan.container.labels)[LABEL_OWNER] == str(os.getuid())
    plan = plan_from(tmp_path, config, host={"SLURM_JOB_ID": "4242"}, flags=LaunchFlags(gpu="none")).require()
    assert plan.job.name == "primus-training-4242"
    plan = plan_from(tmp_path, config, host={"SLURM_JOB_ID": "4242"}, flags=LaunchFlags(gpu="none", name="mine")).require()
    assert plan.job.name == "mine"


@pytest.mark.parametrize("args", [
    ["slurm", "--dry-run", "srun", "-N", "2"],
    ["slurm", "--dry-run", "-N", "2"],
    ["slurm", "sbatch", "--dry-run", "-N", "2"],
    ["--dry-run", "slurm", "-N", "2"],
])
def test_dry_run_wherever_the_launcher_accepts_it(project, args):
    result = run_cli(project, *args, "--", *TRAIN)
    assert result.returncode == 0, result.stderr
    assert "#SBATCH --nodes=2" in result.stdout and not (project / "primus-runs").exists()


def test_the_launchers_own_allowlist_unset_is_one_line(tmp_path):
    """A checkout's runner/.primus.yaml lists ~38 names a user rarely sets: counted in one line, not listed."""
    from ux_helpers import REPO

    checkout = tmp_path / "Primus"
    (checkout / "runner").mkdir(parents=True)
    (checkout / "runner" / "primus-cli-direct.sh").write_text("#!/bin/sh\n")
    (checkout / "runner" / ".primus.yaml").write_text((REPO / "tests" / "fixtures" / "primus-runner.primus.yaml").read_text())
    result = run_cli(checkout, "--trust-project", "--dry-run", "direct", "--", "benchmark", "gemm")
    assert result.rc == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "not forwarded" in line]
    assert "names the launcher's runner/.primus.yaml allowlists are not set here" in line and "NCCL_IB_HCA" not in line
