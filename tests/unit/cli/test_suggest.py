"""Usage errors as a docker or Slurm user meets them: their words name the command meant here, each
error is one line and its fix naming `COMMAND --help` (no usage block), `exec` takes `-it`, and
`--env-file /dev/null` reads no env file (compose's way), through the CLI."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_cli

NO_DOCKER = "unix:///nonexistent/docker.sock"


@pytest.mark.parametrize("word, meant", [("run", "up"), ("stop", "down"), ("rm", "down"), ("kill", "down"), ("ls", "ps"),
                                         ("sbatch", "submit"), ("scancel", "cancel")])
def test_docker_and_slurm_words_name_the_command_meant(tmp_path, word, meant):
    result = run_cli(tmp_path, word, "x")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: unknown command '{word}': did you mean '{meant}'?",
        f"  fix: {'Slurm' if word.startswith('s') and word != 'stop' else 'docker'}'s {word} is primus-runner {meant} here "
        f"(primus-runner {meant} --help)"]


@pytest.mark.parametrize("argv, first", [
    (["up", "--gpuu", "rocm", "--", "true"], "error: unknown option '--gpuu': did you mean '--gpu'?"),
    (["up", "--gpu", "rocmm", "--", "true"], "error: argument --gpu: 'rocmm' is not one of rocm, cuda, none: did you mean 'rocm'?"),
    (["status"], "error: the following arguments are required: job"),
])
def test_a_usage_error_is_one_line_and_its_fix(tmp_path, argv, first):
    result = run_cli(tmp_path, *argv)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and lines[0] == first and lines[1].startswith("  fix: "), lines
    assert f"primus-runner {argv[0]} --help" in lines[1]


@pytest.mark.parametrize("argv", [["exec", "-i", "nosuch", "--", "true"], ["exec", "nosuch", "-i", "sh", "-c", "exit 3"]])
def test_exec_takes_docker_exec_options(tmp_path, argv):
    result = run_cli(tmp_path, *argv, env={"DOCKER_HOST": NO_DOCKER})
    assert "unknown option" not in result.stderr and "usage" not in result.stderr
    assert result.returncode == 1 and "daemon is not reachable" in result.stderr, result.stderr  # parsed; the engine is missing


def test_env_file_dev_null_reads_no_env_file(tmp_path):
    (tmp_path / ".env").write_text("HF_TOKEN=canary-devnull-dotenv-41c9\n")
    result = run_cli(tmp_path, "--env-file", "/dev/null", "--json", "plan", "--gpu", "none", "--env", "HF_TOKEN", "--", "true")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert "HF_TOKEN" not in plan["secrets"] and {"name": "HF_TOKEN", "reason": "unset"} in plan["skipped"]
    assert "canary-devnull-dotenv-41c9" not in result.stdout + result.stderr
