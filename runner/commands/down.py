"""``down [NAME…] [--all] [--dry-run]``: the runner's own containers stopped and removed (never anyone else's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import Selection
    from runner.ui import Output


def run(out: "Output", *, selection: "Selection") -> int:
    from runner.commands.launch import dry_run
    from runner.engines import engine_for_verb, verb

    selection = selection._replace(dry_run=dry_run(selection.dry_run, selection.sources))
    engine = engine_for_verb("down", selection.engine)
    if not selection.dry_run:
        from runner.runs import detached

        detached.before_down(selection.names, selection.all, selection.sources, out)  # a detached run's end outlives its container
    return verb(engine, "down")(selection, out)
