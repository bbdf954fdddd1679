"""Run the CLI as a user would, with the environment given as keywords (tests/cli_runner.py does the work)."""

from __future__ import annotations

from pathlib import Path

import cli_runner

REPO = Path(__file__).resolve().parents[1]
NO_DOCKER = "unix:///nonexistent/docker.sock"


def user_env(home: Path, **extra: str) -> dict:
    return cli_runner.user_env(home, extra)


def cli(cwd: Path, *args: str, home: Path | None = None, **env: str):
    return cli_runner.run_cli(cwd, *args, home=home, env=env)
