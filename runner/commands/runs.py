"""``runs [list|show RUN|gc --older-than D]``: the record of every launch (names only, no value)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.ui import Output


def run(out: "Output", *, action: str, run_id: str | None = None, older_than: str | None = None, dry_run: bool = False,
        all_users: bool = False, limit: int | None = None, state: str | None = None, engine: str | None = None,
        name: str | None = None) -> int:
    from runner.runs import commands as runs

    if action == "show":
        return runs.cmd_show(run_id, out)
    if action == "gc":
        return runs.cmd_gc(older_than, out, dry_run=dry_run)
    return runs.cmd_runs(out, all_users=all_users, limit=limit, state=state, engine=engine, name=name)
