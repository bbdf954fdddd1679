"""``logs RUN|NAME|JOB [-f] [--tail N] [--node N]``: a recorded run's output (running or finished,
local or Slurm, from any directory), else the output of the container or job an engine finds, masked."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import Selection
    from runner.ui import Output


def run(out: "Output", *, selection: "Selection") -> int:
    """The output; with ``-f``, Ctrl-C ends the follow as its normal end (0), on every engine and
    whenever it is typed (what was followed goes on)."""
    from contextlib import nullcontext

    from runner.commands.verbs import run_verb
    from runner.runs.commands import recorded_logs
    from runner.ui.exits import interrupt_ends_follow

    if not selection.names:  # `logs ""`: the CLI drops an empty name
        from runner.errors import UsageError

        raise UsageError("`logs` needs a run id, a job or container name, or a Slurm job id",
                         "primus-runner runs lists the runs; primus-runner ps the containers")
    key = selection.names[0]
    with interrupt_ends_follow() if selection.follow else nullcontext():
        shown = recorded_logs(key, out, selection.sources, follow=selection.follow, tail=selection.tail, node=selection.node)
        return shown if shown is not None else run_verb("logs", selection, out, claimed=key)
    return 0  # Ctrl-C ended the follow
