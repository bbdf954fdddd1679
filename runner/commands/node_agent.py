"""``node-agent PLAN`` / ``node-agent --cleanup JOB [PLAN]`` through the CLI: the Slurm node agent
(srun starts the same agent through ``runner/engines/slurm/entry.py``, without the CLI)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.ui import Output


def run(out: "Output", *, plan_file: str | None, cleanup: str | None) -> int:
    from runner.engines.slurm import agent

    return agent.cleanup(cleanup, out, plan_file) if cleanup is not None else agent.run_node(plan_file, out)
