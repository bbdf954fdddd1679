"""``status JOB``: a Slurm job's state and exit code."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import Selection
    from runner.ui import Output


def run(out: "Output", *, selection: "Selection") -> int:
    from runner.commands.verbs import run_verb

    return run_verb("status", selection, out)
