"""``plan [LAUNCH] -- CMD…``: the fully resolved launch, printed; nothing started, nothing written."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import RunOptions
    from runner.ui import Output


def run(out: "Output", *, options: "RunOptions", engine: str | None) -> int:
    """``plan`` is ``up --dry-run``: the same plan, the same request, the same problems."""
    from runner.commands.launch import launch_engine
    from runner.session import pipeline

    return pipeline.run(options._replace(dry_run=True, compact=True), launch_engine(engine), out)
