"""The launcher's ``docker run`` options that would give the engine a log of the job's output are refused."""

from __future__ import annotations

import pytest

from cli_runner import run_cli

PROJECT = "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n"


@pytest.mark.parametrize("option", [["--log-driver", "json-file"], ["--log-opt", "max-size=10m"]])
def test_an_engine_log_of_the_job_is_refused_with_the_reason_and_the_fix(tmp_path, option):
    (tmp_path / ".primus.yaml").write_text(PROJECT)
    result = run_cli(tmp_path, "--dry-run", "container", *option, "--", "train")
    assert result.returncode == 2, result.stderr
    first = result.stderr.splitlines()[0]
    assert f"container {option[0]} is refused" in first and "unmasked" in first, result.stderr
    assert "primus-runner logs" in result.stderr and "Traceback" not in result.stderr
