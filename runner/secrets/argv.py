"""A program's command line is world-readable (``ps``, ``/proc/<pid>/cmdline``): no secret value on it."""

from __future__ import annotations

from typing import Sequence

from runner.errors import ConfigError, Problem
from runner.secrets.masker import Masker


def refuse_secret_argv(argv: Sequence[str], masker: Masker | None, program: str) -> None:
    """Exit 2 before ``program`` starts when an argument holds the value of a secret in scope (named by position, never shown)."""
    if not masker:
        return
    hits = [index for index, arg in enumerate(argv) if masker.contains_secret(str(arg).encode("utf-8", "surrogateescape"))]
    if hits:
        raise ConfigError(Problem(
            f"the command line of {program} would hold a secret value (argument {', '.join(str(i) for i in hits)}), "
            "readable by every user of this host; it was not started",
            hint="pass secrets through the environment or --secret NAME, never as arguments",
        ))
