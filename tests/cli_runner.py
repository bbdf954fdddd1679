"""Run the CLI as a user would: ``sys.executable -P -m runner ARGS`` in a given directory, with a
clean environment whose home and XDG directories are inside the test's temporary directory.

The ``cli`` fixture (tests/conftest.py) binds this to the test's ``tmp_path``; helpers that
need it outside a fixture import ``run_cli`` and ``user_env`` from here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

# Variables of the developer's or the CI machine's own shell that would change what the runner
# decides (its own settings, tracker and GPU settings, CI detection): never inherited.
INHERITED_NEVER_PREFIXES = ("PRIMUS_", "NCCL_", "RCCL_", "GLOO_", "IONIC_", "HIPBLASLT_", "WANDB", "MLFLOW", "HF_",
                            "DATABRICKS", "GITHUB_", "GITLAB_", "CI_", "SLURM_")
INHERITED_NEVER = ("CI", "NO_COLOR", "FORCE_COLOR", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")


class CliResult(NamedTuple):
    """``rc, out, err = cli(...)``; also ``.returncode``/``.stdout``/``.stderr`` as subprocess gives them."""

    returncode: int
    stdout: str | bytes
    stderr: str | bytes

    @property
    def rc(self) -> int:
        return self.returncode


def user_env(home: Path, env: dict | None = None, unset: tuple[str, ...] = ()) -> dict:
    """This process's environment without the runner's and the trackers' settings, home and XDG in ``home``."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(INHERITED_NEVER_PREFIXES) and not k.endswith("_VISIBLE_DEVICES")
             and k not in INHERITED_NEVER and k not in unset}
    home = Path(home)
    clean.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_STATE_HOME=str(home / ".local" / "state"),
                 XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local" / "share"), NO_COLOR="1")
    clean.update(env or {})
    return clean


def run_cli(cwd: Path, *args: str, env: dict | None = None, home: Path | None = None, text: bool = True,
            timeout: float = 120, unset: tuple[str, ...] = (), **kw) -> CliResult:
    """``python -P -m runner ARGS`` in ``cwd``; ``home`` defaults to ``cwd`` (its ``.primus.yaml`` is then
    the user's own file too, as in most tests). ``env`` is added to the clean environment. ``-P``: a
    Primus checkout's own ``runner/`` directory in ``cwd`` must not shadow the package."""
    full_env = user_env(home or cwd, env, unset)
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    streams.update({k: kw.pop(k) for k in ("stdout", "stderr") if k in kw})
    done = subprocess.run([sys.executable, "-P", "-m", "runner", *args], cwd=cwd, env=full_env, text=text,
                          timeout=timeout, **streams, **kw)
    return CliResult(done.returncode, done.stdout, done.stderr)


def run_in_clone(repo: Path, *args: str, env: dict | None = None, cwd: Path | None = None, **kw) -> CliResult:
    """The CLI in ``cwd`` (default: ``repo``, a cloned repository) for a user whose home, cache and state are
    beside the clone (``repo.parent`` / ``home``, ``cache``, ``state``): nothing of the user's is inside it."""
    root = Path(repo).parent
    return run_cli(cwd or repo, *args, home=root / "home",
                   env={"XDG_CACHE_HOME": str(root / "cache"), "XDG_STATE_HOME": str(root / "state"), **(env or {})}, **kw)


def files_under(root: Path) -> set:
    """Every path under ``root``, relative to it: taken before and after a command, what it wrote."""
    return {p.relative_to(root) for p in Path(root).rglob("*")}
