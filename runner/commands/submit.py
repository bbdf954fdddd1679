"""``submit [LAUNCH] [Slurm options] [--wait] [--dry-run] -- CMD…``: the job on Slurm, one container
per node; the job id, or with ``--wait`` the job's exit code. ``up`` on the Slurm engine."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import RunOptions
    from runner.ui import Output


def run(out: "Output", *, options: "RunOptions", engine: str | None = None) -> int:
    from runner.commands import up

    return up.run(out, options=options, engine=engine, default_engine="slurm")  # submit is the Slurm engine's own command
