"""The launcher's `direct:` keys act as in the launcher (runner/commands/launcher_direct.py): each reaches the
direct script as the option that means the same, a value it cannot take is exit 2 naming the key,
and a key in the file the script reads itself is not handed over twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_cli


@pytest.fixture
def checkout(tmp_path) -> Path:
    ck = tmp_path / "Primus"
    (ck / "runner").mkdir(parents=True)
    (ck / "runner" / "primus-cli-direct.sh").write_text("#!/bin/sh\n")
    (tmp_path / "home").mkdir()
    return ck


def _command(checkout: Path, config: str, *args: str, where: str = "direct") -> list[str]:
    (checkout.parent / "user.yaml").write_text(config)
    result = run_cli(checkout, "--json", "--config", str(checkout.parent / "user.yaml"), "--dry-run", where, *args,
                     home=checkout.parent / "home")
    assert result.rc == 0, result.stderr
    return json.loads(result.stdout)["command"]


def test_each_direct_key_is_the_options_the_script_takes(checkout):
    config = ("direct:\n  run_mode: single\n  script: tools/run.py\n  numa: true\n  log_file: /tmp/x.log\n"
              "  patch: [p1.sh, p2.sh]\n")
    command = _command(checkout, config, "--no-numa", "--", "benchmark", "gemm")
    script = str(checkout / "runner" / "primus-cli-direct.sh")
    assert command == ["bash", script, "--single", "--script", "tools/run.py", "--numa", "--log_file", "/tmp/x.log",
                       "--patch", "p1.sh", "--patch", "p2.sh", "--no-numa", "--", "benchmark", "gemm"]  # the user's last: they win


def test_the_distributed_keys_are_the_jobs_variables_where_nothing_sets_them(checkout):
    (checkout.parent / "user.yaml").write_text("direct:\n  gpus_per_node: 4\n  master_port: 2345\n")
    result = run_cli(checkout, "--json", "--config", str(checkout.parent / "user.yaml"), "--dry-run", "direct", "--", "x",
                     home=checkout.parent / "home", env={"MASTER_PORT": "9999"})
    env = json.loads(result.stdout)["env"]
    assert env["GPUS_PER_NODE"] == "4" and env["MASTER_PORT"] == "9999"  # the user's environment wins, as in the launcher


def test_the_launchers_own_distributed_defaults_are_left_to_the_script(checkout):
    """Its runner/.primus.yaml says nnodes: 1 (the script's default): inside an allocation the script derives NNODES
    from Slurm, so the runner does not set it (as the launcher, which ignores direct.nnodes)."""
    (checkout / "runner" / ".primus.yaml").write_text("direct:\n  nnodes: 1\n  master_addr: localhost\n")
    result = run_cli(checkout, "--json", "--trust-project", "--dry-run", "direct", "--", "x", home=checkout.parent / "home")
    assert result.rc == 0, result.stderr
    env = json.loads(result.stdout)["env"]
    assert "NNODES" not in env and "MASTER_ADDR" not in env


@pytest.mark.parametrize("key, value", [("run_mode", "mpirun"), ("numa", "sometimes")])
def test_a_value_the_script_cannot_take_is_exit_2_naming_the_key(checkout, key, value):
    (checkout.parent / "user.yaml").write_text(f"direct:\n  {key}: {value}\n")
    result = run_cli(checkout, "--config", str(checkout.parent / "user.yaml"), "direct", "--", "x", home=checkout.parent / "home")
    assert result.rc == 2 and f"direct.{key}" in result.stderr and "user.yaml" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_key_in_the_file_the_script_reads_itself_is_not_handed_over_twice(checkout):
    """The launcher's own runner/.primus.yaml is read by the script itself (no ~/.primus.yaml here)."""
    (checkout / "runner" / ".primus.yaml").write_text("direct:\n  patch: [own.sh]\n")
    command = _command(checkout, "direct:\n  script: mine.py\n", "--", "x")
    assert "own.sh" not in command and command[2:4] == ["--script", "mine.py"]


def test_in_a_container_the_keys_reach_the_inner_script_too(checkout):
    command = _command(checkout, "container:\n  gpu: none\n  options:\n    image: busybox\ndirect:\n  run_mode: single\n",
                       "--", "x", where="container")
    assert command[:3] == ["bash", str(checkout / "runner" / "primus-cli-direct.sh"), "--single"]


def test_the_file_the_script_reads_itself(tmp_path):
    from runner.commands.launcher_direct import own_file

    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    assert own_file("/ck", str(home), on_host=True) == "/ck/runner/.primus.yaml"
    (home / ".primus.yaml").write_text("direct: {}\n")
    assert own_file("/ck", str(home), on_host=True) == str(home / ".primus.yaml")
    assert own_file("/ck", str(home), on_host=False) == "/ck/runner/.primus.yaml"  # a container's HOME holds none of the user's
    assert own_file(None, str(home), on_host=False) is None
