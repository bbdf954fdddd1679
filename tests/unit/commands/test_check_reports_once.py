"""check: every problem once (text and --json), and one summary line at the end."""

from __future__ import annotations

import json

from cli_runner import run_cli
from ux_helpers import NO_DOCKER

REQUIRES = "container:\n  gpu: none\n  options:\n    image: busybox\npassthrough:\n  required: [NEEDED_TOKEN_X]\n"


def test_a_missing_secret_is_reported_once_and_summed_up(tmp_path):
    (tmp_path / ".primus.yaml").write_text(REQUIRES)
    text = run_cli(tmp_path, "check")
    assert text.returncode == 2
    assert text.stderr.count("NEEDED_TOKEN_X") == 1, text.stderr
    last = text.stderr.strip().splitlines()[-1]
    assert last in ("check: 1 problem", "check: 2 problems"), last  # 2 when no engine answers here
    data = json.loads(run_cli(tmp_path, "--json", "check").stdout)
    assert sum("NEEDED_TOKEN_X" in p["message"] for p in data["problems"]) == 1, data["problems"]


def test_summary_counts_the_unreachable_engine(tmp_path):
    (tmp_path / ".primus.yaml").write_text(REQUIRES)
    result = run_cli(tmp_path, "check", env={"DOCKER_HOST": NO_DOCKER})
    assert result.stderr.strip().splitlines()[-1] == "check: 2 problems", result.stderr


def test_ok_summary(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n")
    result = run_cli(tmp_path, "check", "--engine", "slurm")
    assert result.stderr.strip().splitlines()[-1] in ("check: ok", "check: 1 problem"), result.stderr


def test_an_online_failure_is_printed_once(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n"
                                          "trackers:\n  disable_mlflow: false\n")
    result = run_cli(tmp_path, "check", "--online", "--timeout", "2", "--engine", "slurm", env={"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"})
    lines = [line for line in result.stderr.splitlines() if "127.0.0.1:9" in line or "mlflow" in line.lower() and "unreachable" in line]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
