"""``cancel JOB [--dry-run]``: a Slurm job cancelled, its containers removed on every node."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import Selection
    from runner.ui import Output


def run(out: "Output", *, selection: "Selection") -> int:
    from runner.commands.launch import dry_run
    from runner.commands.verbs import run_verb

    return run_verb("cancel", selection._replace(dry_run=dry_run(selection.dry_run, selection.sources)), out)
