"""Usage errors that teach: did-you-mean, no abbreviations, hidden commands hidden, help for every flag."""

from __future__ import annotations

import argparse

import pytest

from runner.cli import build_parser
from runner.cli.suggest import HIDDEN_COMMANDS
from cli_runner import run_cli


def test_unknown_command_suggests_the_closest_and_hides_node_agent(tmp_path):
    result = run_cli(tmp_path, "chek")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "did you mean 'check'?" in result.stderr
    assert "node-agent" not in result.stderr


@pytest.mark.parametrize("argv, wanted", [
    (["up", "--gpuu", "rocm", "--", "true"], "did you mean '--gpu'?"),
    (["plan", "--imagee", "x", "--", "true"], "did you mean '--image'?"),
    (["up", "--gpu", "rocmm", "--", "true"], "did you mean 'rocm'?"),
])
def test_unknown_flag_or_choice_suggests_the_closest(tmp_path, argv, wanted):
    result = run_cli(tmp_path, *argv)
    assert result.returncode == 2 and wanted in result.stderr, result.stderr
    assert "usage:" not in result.stderr and "primus-runner " + argv[0] + " --help" in result.stderr  # the command's own help


def test_no_abbreviations(tmp_path):
    result = run_cli(tmp_path, "--json", "plan", "--imag", "busybox", "--gpu", "none", "--", "true")
    assert result.returncode == 2, "--imag must not silently mean --image"
    assert "did you mean '--image'?" in result.stderr


def _walk(parser: argparse.ArgumentParser, path: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if name not in HIDDEN_COMMANDS:
                    yield from _walk(sub, f"{path} {name}")
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield path, action


def test_every_flag_and_argument_has_help():
    missing = [f"{path}: {'/'.join(a.option_strings) or a.dest}" for path, a in _walk(build_parser(), "primus-runner")
               if a.help != argparse.SUPPRESS and not (a.help or "").strip()]
    assert not missing, "no help text: " + ", ".join(missing)


def test_parsers_refuse_abbreviations_everywhere():
    def parsers(p):
        yield p
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from parsers(sub)
    assert all(p.allow_abbrev is False for p in parsers(build_parser()))


def test_a_flags_value_is_blamed_on_the_flag_not_the_file(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\nslurm:\n  time: \"4:00:00\"\n")
    result = run_cli(tmp_path, "submit", "--time", "1 hour", "--dry-run", "--", "true")
    assert result.returncode == 2
    # the value is named with the flag that gave it, as typed; never a file it did not come from
    assert "--time '1 hour'" in result.stderr and ".primus.yaml" not in result.stderr and "defaults.yaml" not in result.stderr
    (tmp_path / "c.yaml").write_text("slurm:\n  time: \"1 hour\"\n")
    from_file = run_cli(tmp_path, "--config", "c.yaml", "submit", "--dry-run", "--", "true")
    assert from_file.returncode == 2 and "c.yaml:2" in from_file.stderr


def test_a_missing_device_from_a_flag_is_not_blamed_on_the_gpu(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  options:\n    image: busybox\n")
    result = run_cli(tmp_path, "check", "--gpu", "none", "--device", "/dev/nosuch", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.returncode == 2
    line = next(line for line in result.stderr.splitlines() if "/dev/nosuch" in line)
    assert "--device" in line and "--gpu none" not in line, line
