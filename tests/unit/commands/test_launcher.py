"""The Primus launcher's modes run (``runner.commands.launcher``): the checkout found as the launcher
finds it, the inner command, the launcher's switches from the command line or the config, and each
mode's launch (``direct`` on the process engine, for real, with a stand-in direct launcher)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_cli
from runner.commands.launcher import _flags, _mounts_at, find_checkout, inner_command
from runner.options import LaunchFlags, ModeOptions

TRAIN = ["train", "pretrain", "--config", "exp.yaml"]
# a stand-in for Primus's runner/primus-cli-direct.sh: what it was given, and one variable of the job
STAND_IN = '#!/bin/sh\necho "direct got: $*"\necho "level=${PRIMUS_LOG_LEVEL:-unset}"\nexit 4\n'


@pytest.fixture
def checkout(tmp_path) -> Path:
    ck = tmp_path / "Primus"
    (ck / "runner").mkdir(parents=True)
    (ck / "runner" / "primus-cli-direct.sh").write_text(STAND_IN)
    (tmp_path / "home").mkdir()
    return ck


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


def test_direct_runs_the_checkouts_launcher_on_this_host_and_returns_its_code(checkout):
    result = run_cli(checkout, "direct", "--", *TRAIN, home=checkout.parent / "home")
    assert result.rc == 4, result.stderr
    assert f"direct got: -- {' '.join(TRAIN)}" in result.stdout and "level=unset" in result.stdout


def test_debug_is_primus_log_level_debug_for_the_job(checkout):
    result = run_cli(checkout, "direct", "--debug", "--single", "--", "train", home=checkout.parent / "home")
    assert result.rc == 4, result.stderr
    assert "direct got: --single -- train" in result.stdout and "level=DEBUG" in result.stdout
    assert "Debug mode enabled (PRIMUS_LOG_LEVEL=DEBUG)" in result.stderr


@pytest.mark.parametrize("how", ["flag", "config"])
def test_a_dry_run_says_what_it_would_execute_and_runs_nothing(checkout, how):
    home = checkout.parent / "home"
    (home / "dry.yaml").write_text("main:\n  dry_run: true\n")
    argv = ["--dry-run", "direct"] if how == "flag" else ["--config", str(home / "dry.yaml"), "direct"]
    result = run_cli(checkout, *argv, "--", "train", home=home)
    assert result.rc == 0, result.stderr
    assert "direct got" not in result.stdout
    script = checkout / "runner" / "primus-cli-direct.sh"
    assert f"Would execute: bash {script} -- train" in result.stderr and "Dry-run mode: command not executed" in result.stderr
    assert not (home / ".local" / "state" / "primus-runner").exists()  # no run recorded


def test_no_primus_arguments_is_exit_2(checkout):
    result = run_cli(checkout, "direct", home=checkout.parent / "home")
    assert result.rc == 2 and "no Primus arguments given" in result.stderr
    assert "primus-runner direct -- train pretrain --config exp.yaml" in result.stderr


def test_container_mounts_the_checkout_at_its_own_path(checkout):
    result = run_cli(checkout, "--json", "--dry-run", "container", "--image", "img:1", "--", *TRAIN, home=checkout.parent / "home")
    assert result.rc == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["command"] == ["bash", str(checkout / "runner" / "primus-cli-direct.sh"), *TRAIN]
    assert {(m["source"], m["target"]) for m in plan["mounts"]} >= {(str(checkout), str(checkout))}
    assert plan["workdir"] == str(checkout)


@pytest.mark.parametrize(("spec", "mounts"), [
    ("/ck:/ck", True),
    ("/ck", True),  # docker's -v /ck: the same path inside
    ("/ck/:/ck:ro", True),
    ("/ck:/data", False),  # the same source elsewhere is a second mount
    ("/other:/ck", False),
])
def test_mounts_at(spec, mounts):
    assert _mounts_at(spec, "/ck") is mounts


def _mode(**flags) -> ModeOptions:
    return ModeOptions("container", ("x",), flags=LaunchFlags(**flags))


def test_the_launch_flags_of_a_mode():
    flags = _flags(_mode(volume=("/data:/data",)), "/ck", "/ck", debug=True, on_host=False)
    assert flags.volume == ("/data:/data", "/ck:/ck") and flags.workdir == "/ck" and "PRIMUS_LOG_LEVEL=DEBUG" in flags.env
    assert _flags(_mode(volume=("/ck:/ck:ro",)), "/ck", "/ck", False, False).volume == ("/ck:/ck:ro",)  # not mounted twice
    assert _flags(_mode(), "/ck", "/ck", False, on_host=True).volume == ()  # on the host: nothing to mount
    zero = _flags(ModeOptions("container", ("x",), gpus="0"), None, None, False, False)
    assert (zero.gpu, zero.gpus) == ("none", None)  # primus-cli's --gpus 0: no GPU devices
    assert _flags(_mode(workdir="/w"), "/ck", "/ck", False, False).workdir == "/w"  # the user's beats the checkout
