"""``check``: every problem found before launch, each once (text and --json), one summary line at the
end, and the exit code of the worst: 2 for config problems, 1 for an engine that does not answer."""

from __future__ import annotations

import json

from cli_runner import run_cli
from ux_helpers import NO_DOCKER

REQUIRES = "container:\n  gpu: none\n  options:\n    image: busybox\npassthrough:\n  required: [NEEDED_TOKEN_X]\n"


def test_a_missing_secret_is_reported_once_and_summed_up(tmp_path):
    (tmp_path / ".primus.yaml").write_text(REQUIRES)
    text = run_cli(tmp_path, "check", "--engine", "process")  # an engine that always answers: the secret is the one problem
    assert text.returncode == 2
    assert text.stderr.count("NEEDED_TOKEN_X") == 1, text.stderr
    assert text.stderr.strip().splitlines()[-1] == "check: 1 problem", text.stderr
    data = json.loads(run_cli(tmp_path, "--json", "check", "--engine", "process").stdout)
    assert sum("NEEDED_TOKEN_X" in p["message"] for p in data["problems"]) == 1, data["problems"]


def test_summary_counts_the_unreachable_engine(tmp_path):
    (tmp_path / ".primus.yaml").write_text(REQUIRES)
    result = run_cli(tmp_path, "check", env={"DOCKER_HOST": NO_DOCKER})
    assert result.returncode == 2  # the config problem outranks the engine's exit 1
    assert result.stderr.strip().splitlines()[-1] == "check: 2 problems", result.stderr


def test_ok_summary(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n")
    result = run_cli(tmp_path, "check", "--engine", "process")
    assert result.returncode == 0 and result.stderr.strip().splitlines()[-1] == "check: ok", result.stderr


def test_an_online_failure_is_printed_once(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n"
                                          "trackers:\n  disable_mlflow: false\n")
    result = run_cli(tmp_path, "check", "--online", "--timeout", "2", "--engine", "process", env={"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"})
    lines = [line for line in result.stderr.splitlines() if "127.0.0.1:9" in line or "mlflow" in line.lower() and "unreachable" in line]
    assert result.returncode == 2 and len(lines) == 1, result.stderr


def test_an_engine_that_does_not_answer_is_exit_1(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n")
    result = run_cli(tmp_path, "--json", "check", env={"DOCKER_HOST": NO_DOCKER, "CONTAINER_HOST": "unix:///nonexistent/podman.sock"})
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["problems"] == [] and report["engine"]["reachable"] is False


def test_the_exit_code_is_the_worst_finding():
    from runner.commands.check import Findings, summary_line
    from runner.errors import Problem, RunnerError

    refused = RunnerError("image refused")
    cases = [(Findings(), 0, "check: ok"),
             (Findings(engine_error="no socket"), 1, "check: 1 problem"),
             (Findings(refused=[refused]), 3, "check: 1 problem"),
             (Findings(problems=[Problem("a")], refused=[refused], engine_error="x"), 2, "check: 3 problems")]
    for found, code, line in cases:
        assert (found.exit_code(), summary_line(found), found.ok) == (code, line, code == 0)


def test_a_project_file_is_not_needed(tmp_path):
    result = run_cli(tmp_path, "check", "--engine", "process", "--gpu", "none", "--image", "busybox")
    assert result.returncode == 0 and result.stderr.strip().splitlines()[-1] == "check: ok", result.stderr
