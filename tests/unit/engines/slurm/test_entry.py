"""The node agent's own entry, started exactly as the batch script's ``srun`` line starts it
(``script.agent_command``: ``python -S -P …/entry.py --path DIRS``): a command line it was not
written for is one usage error (exit 2, no traceback), and it runs this checkout's agent."""

from __future__ import annotations

import subprocess

import pytest

from runner.engines.slurm.script import agent_command


def _agent(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*agent_command(), *args], capture_output=True, text=True, timeout=60, env=env or {"PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("args, said", [
    (("node-agent",), "node-agent: unexpected arguments (none)"),
    (("node-agent", "a.json", "b.json"), "node-agent: unexpected arguments a.json b.json"),
    (("node-agent", "--cleanup"), "node-agent: unexpected arguments --cleanup"),
    (("node-agent", "--cleanup", "12; rm -rf /"), "'12; rm -rf /' is not a Slurm job id"),
    (("node-agent", "plan.json"), "node-agent runs inside a Slurm job step"),
])
def test_a_command_line_it_was_not_written_for_is_one_usage_error(args, said):
    done = _agent(*args)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "fix: " in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_it_finds_this_checkouts_package_through_path_alone(tmp_path):
    # A `runner/` in the working directory (a Primus checkout's) is not what the agent imports.
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "__init__.py").write_text("raise SystemExit('the wrong runner package was imported')\n")
    done = subprocess.run([*agent_command(), "node-agent"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 2 and "unexpected arguments" in done.stderr, done.stderr
