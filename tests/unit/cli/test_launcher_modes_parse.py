"""Launcher modes without an engine: the inner command, the entry split, `slurm`'s default launcher,
the Slurm flag checks (nothing widens --export or injects a directive), names and owner labels."""

from __future__ import annotations

import json
import os

import pytest

from cli_runner import run_cli
from plan_factory import plan_from

from runner.cli.launcher_args import default_launcher, parse
from runner.commands.launcher import find_checkout, inner_command
from runner.options import LaunchFlags
from runner.plan import LABEL_OWNER

TRAIN = ["train", "pretrain", "--config", "exp.yaml"]


def test_checkout_from_primus_path_or_cwd(tmp_path):
    assert find_checkout({"PRIMUS_PATH": str(tmp_path / "p")}, "/") == str(tmp_path / "p")
    assert find_checkout({}, str(tmp_path)) is None
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "primus-cli-direct.sh").write_text("#!/bin/sh\n")
    assert find_checkout({}, str(tmp_path)) == str(tmp_path)


def test_inner_command_follows_the_launcher():
    """The script path is absolute (a container's --workdir cannot break it); on a host the direct
    launcher gets `-- ARGS` as `primus-cli direct -- ARGS` hands them over (`--help` reaches Primus)."""
    assert inner_command(TRAIN, "/ck", None, on_host=False) == (("bash", "/ck/runner/primus-cli-direct.sh", *TRAIN), "/ck")
    assert inner_command(TRAIN, "/ck", None, on_host=True) == (("bash", "/ck/runner/primus-cli-direct.sh", "--", *TRAIN), "/ck")
    assert inner_command(["--help"], "/ck", None, on_host=True) == (("bash", "/ck/runner/primus-cli-direct.sh", "--", "--help"), "/ck")
    assert inner_command(TRAIN, None, None, on_host=False) == (("primus-cli", "direct", "--", *TRAIN), None)
    assert inner_command(TRAIN, None, ["my-entry"], on_host=True) == (("my-entry", *TRAIN), None)
    assert inner_command(TRAIN, None, None, True, ("--single",)) == (("primus-cli", "direct", "--single", "--", *TRAIN), None)


def test_slurm_entry_split():
    """What follows slurm's first --: an entry (container|direct) or, as the launcher routes it, the container entry."""
    def split(tokens):
        got = parse("slurm", ["-N", "2", "--", *tokens])
        return got.entry, got.options, got.primus_args
    assert split(TRAIN) == ("container", [], TRAIN)
    assert split(["preflight", "--quick"]) == ("container", [], ["preflight", "--quick"])
    assert split(["container", "--image", "x", "--", *TRAIN]) == ("container", [("image", "x")], TRAIN)
    assert split(["direct", "--", *TRAIN]) == ("direct", [], TRAIN)


@pytest.mark.parametrize("argv, expected", [
    (["slurm", "-N", "2", "--", "x"], ["slurm", "srun", "-N", "2", "--", "x"]),
    (["--dry-run", "slurm", "--", "x"], ["--dry-run", "slurm", "srun", "--", "x"]),
    (["--config", "f.yaml", "slurm", "sbatch", "--", "x"], ["--config", "f.yaml", "slurm", "sbatch", "--", "x"]),
    (["slurm", "--json", "sbatch", "--", "x"], ["slurm", "--json", "sbatch", "--", "x"]),
    (["slurm", "--help"], ["slurm", "--help"]),
    (["slurm", "--config", "f.yaml", "--debug", "-N", "2", "--", "x"], ["slurm", "srun", "--config", "f.yaml", "--debug", "-N", "2", "--", "x"]),
    (["slurm", "--dry-run", "sbatch", "--", "x"], ["slurm", "--dry-run", "sbatch", "--", "x"]),
    (["up", "--", "slurm"], ["up", "--", "slurm"]),
])
def test_slurm_defaults_to_srun(argv, expected):
    assert default_launcher(argv) == expected


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


def test_an_exported_docker_image_is_the_image_as_the_launcher_takes_it(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n")
    result = run_cli(tmp_path, "--json", "--dry-run", "container", "--", "benchmark", "gemm", env={"DOCKER_IMAGE": "exported/img:2"})
    assert result.rc == 0 and json.loads(result.stdout)["image"] == "exported/img:2", result.stderr
    assert "from DOCKER_IMAGE" in result.stderr
    typed = run_cli(tmp_path, "--json", "--dry-run", "container", "--image", "typed/img:3", "--", "x", env={"DOCKER_IMAGE": "exported/img:2"})
    assert json.loads(typed.stdout)["image"] == "typed/img:3" and "--image typed/img:3 on the command line wins" in typed.stderr


def test_outside_a_checkout_one_notice_says_the_images_own_launcher_runs(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n")
    result = run_cli(tmp_path, "--dry-run", "container", "--", "benchmark", "gemm")
    assert result.rc == 0, result.stderr
    assert result.stderr.count("no Primus checkout here") == 1 and "PRIMUS_PATH" in result.stderr


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
