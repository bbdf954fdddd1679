"""``logs RUN|NAME|JOB [-f] [--tail N] [--node N]``: a recorded run's output (running or finished,
local or Slurm, from any directory), else the output of the container or job an engine finds, masked."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import Selection
    from runner.ui import Output


def run(out: "Output", *, selection: "Selection") -> int:
    from runner.commands.verbs import run_verb
    from runner.runs.commands import recorded_logs

    key = selection.names[0]
    shown = recorded_logs(key, out, selection.sources, follow=selection.follow, tail=selection.tail, node=selection.node)
    if shown is not None:
        return shown
    return run_verb("logs", selection, out, claimed=key)
