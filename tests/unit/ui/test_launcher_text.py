"""The launcher's own words where users and scripts grep for them, next to the runner's own:
its banner, version line, mode titles, `Unknown mode: X`, and a dry run's `Would execute:` and
`Dry-run mode: command not executed`; the runner's `usage:` and `primus-runner X.Y.Z` stay."""

from __future__ import annotations

import pytest

from cli_runner import run_cli
from plan_factory import write_project


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path, "container:\n  gpu: none\n  options:\n    image: busybox\n", "")


def test_version_is_one_line_the_runners_then_the_launchers_words(project):
    for argv in (["--version"], ["--no-color", "--version"]):  # the fast path and argparse's
        lines = run_cli(project, *argv).stdout.splitlines()
        assert len(lines) == 1 and lines[0].startswith("primus-runner ") and "Primus CLI version 1.0.0" in lines[0], argv


def test_help_shows_the_launchers_banner_beside_the_runners_usage(project):
    top = run_cli(project, "--help")
    assert top.returncode == 0 and "usage: primus-runner" in top.stdout
    for words in ("Primus Unified Launcher CLI", "Usage:", "Global Options"):
        assert words in top.stdout, words
    for mode, title in (("direct", "Primus Direct Launcher"), ("container", "Docker/Podman container"),
                        ("slurm", "Primus Slurm Launcher")):
        shown = run_cli(project, mode, "--help")
        assert shown.returncode == 0 and title in shown.stdout and "Usage:" in shown.stdout, mode
    assert "Primus" not in run_cli(project, "plan", "--help").stdout.split("\n\n")[1]  # the runner's own commands keep theirs


@pytest.mark.parametrize("word", ["unknown-mode", "--"])
def test_a_first_word_that_is_no_mode_nor_command_is_an_unknown_mode(project, word):
    result = run_cli(project, word, "train")
    assert result.returncode == 2 and f"Unknown mode: {word}" in result.stderr and "Traceback" not in result.stderr


def test_a_modes_help_acknowledges_debug_and_dry_run_as_the_launcher_does(project):
    result = run_cli(project, "--debug", "--dry-run", "direct", "--help")
    assert result.returncode == 0 and "Primus Direct Launcher" in result.stdout
    assert "Debug mode enabled (PRIMUS_LOG_LEVEL=DEBUG)" in result.stderr
    assert "Dry-run mode: command not executed" in result.stderr
    plain = run_cli(project, "direct", "--help")
    assert "Debug mode" not in plain.stderr and "Dry-run mode" not in plain.stderr


def test_a_missing_config_file_is_an_error_before_a_modes_help(project):
    result = run_cli(project, "--config", "/nonexistent/primus.yaml", "direct", "--help")
    assert result.returncode == 2 and "config file not found: /nonexistent/primus.yaml" in result.stderr
    assert "Primus Direct Launcher" not in result.stdout


def test_a_launcher_dry_run_says_what_it_would_execute_and_that_it_did_not(project):
    result = run_cli(project, "--dry-run", "container", "--", "train", "pretrain", "--config", "exp.yaml")
    assert result.returncode == 0
    assert "Would execute: primus-cli direct -- train pretrain --config exp.yaml" in result.stderr  # no checkout here: the image's
    assert result.stderr.rstrip().endswith("Dry-run mode: command not executed")
