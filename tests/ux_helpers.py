"""Run the CLI as a user would: a subprocess of this interpreter, in a clean directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NO_DOCKER = "unix:///nonexistent/docker.sock"


def user_env(home: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PRIMUS_", "NCCL_", "RCCL_", "GLOO_", "IONIC_", "HIPBLASLT_", "WANDB", "MLFLOW", "HF_", "DATABRICKS"))
           and k not in ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "FORCE_COLOR")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), NO_COLOR="1")
    env.update(extra)
    return env


def cli(cwd: Path, *args: str, home: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-m", "runner", *args], cwd=cwd, env=user_env(home or cwd, **env),
                          capture_output=True, text=True, timeout=120)
