"""The launcher's own words, where users and scripts grep for them.

``primus-cli``'s users and its own test suite look for its banner lines (``Primus Unified
Launcher CLI``, ``Primus CLI version 1.0.0``, ``Primus Direct Launcher`` …), ``Unknown mode: X``,
and, in a dry run, ``Would execute: …`` and ``Dry-run mode: command not executed``. The runner
prints the same lines where the launcher prints them, next to its own (its ``usage:`` line,
its ``primus-runner X.Y.Z`` version line stay as the contract has them; ``runner.VERSION_TEXT``
holds both version lines).
"""

from __future__ import annotations

import shlex
from typing import Sequence

TOP_HELP = """Also the Primus Unified Launcher CLI (a drop-in for runner/primus-cli):

Usage:
    primus-runner [global-options] <mode> [mode-args] -- [primus-commands and args]
    modes: container, direct, slurm (each mode's --help says more)

Global Options (the launcher's, before the mode):
    --config FILE        load this YAML config over the defaults
    --debug              PRIMUS_LOG_LEVEL=DEBUG for the job
    --dry-run            show what would run, run nothing"""

# Each mode's help opens with the launcher's own title for that mode.
MODE_TITLES = {
    "container": "Launch a Primus task in a Docker/Podman container",
    "direct": "Primus Direct Launcher",
    "slurm": "Primus Slurm Launcher",
}

DEBUG_LINE = "Debug mode enabled (PRIMUS_LOG_LEVEL=DEBUG)"
DRY_RUN_LINE = "Dry-run mode: command not executed"


def help_description(prog: str, description: str | None) -> str | None:
    """A help's description with the launcher's words: the top level's gets the launcher's banner,
    usage and global options; a launcher mode's opens with the launcher's title for that mode."""
    words = prog.split()
    if words == ["primus-runner"]:
        return f"{description}\n\n{TOP_HELP}"
    if len(words) == 2 and words[1] in MODE_TITLES:
        return _mode_description(words[1], description or "")
    return description


def _mode_description(mode: str, summary: str) -> str:
    usage = {"container": "container [options] -- <Primus args>", "direct": "direct [options] -- <Primus args>",
             "slurm": "slurm [srun|sbatch] [Slurm flags] -- [container|direct [options] --] <Primus args>"}[mode]
    return f"{MODE_TITLES[mode]} ({summary})\n\nUsage:\n    primus-runner [global-options] {usage}"


def unknown_mode(word: str) -> str:
    """The launcher's message for a first word that is no mode (and here no command either)."""
    return f"Unknown mode: {word}: neither a launcher mode (slurm, container, direct) nor a primus-runner command"


def would_execute(command: Sequence[str]) -> str:
    return "Would execute: " + shlex.join(command)
