"""docker's and sbatch's spellings: -e/-v/-w/-u and --rm on up, -N/-p/-t/-A on submit."""

from __future__ import annotations

import json

from cli_runner import run_cli

PROJECT = "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n"


def test_up_takes_docker_short_options(tmp_path):
    (tmp_path / ".primus.yaml").write_text(PROJECT)
    (tmp_path / "data").mkdir()
    result = run_cli(tmp_path, "--json", "up", "--dry-run", "--rm", "-e", "LIT=1", "-v", f"{tmp_path / 'data'}:/data", "-w", "/data",
                     "-u", "1000:1000", "--", "true")
    assert result.returncode == 0, result.stderr
    request = json.dumps(json.loads(result.stdout))
    for expected in ("LIT", "/data", "1000:1000"):
        assert expected in request, (expected, request)


def test_plan_takes_docker_short_options(tmp_path):
    (tmp_path / ".primus.yaml").write_text(PROJECT)
    result = run_cli(tmp_path, "--json", "plan", "-e", "LIT=1", "-w", "/w", "-u", "7", "--", "true")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["env"]["LIT"] == "1" and data["workdir"] == "/w" and data["user"] == "7"


def test_submit_takes_sbatch_short_options(tmp_path):
    (tmp_path / ".primus.yaml").write_text(PROJECT)
    result = run_cli(tmp_path, "submit", "-N", "2", "-p", "debug", "-t", "0:10:00", "-A", "acct", "--dry-run", "--", "true")
    assert result.returncode == 0, result.stderr
    for directive in ("--nodes=2", "--partition=debug", "--time=0:10:00", "--account=acct"):
        assert directive in result.stdout, (directive, result.stdout)
