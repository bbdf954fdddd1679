"""The Slurm engine's verbs: ``ps`` (the runner's jobs in the queue, as ``squeue`` shows them),
``logs JOB``, ``status JOB`` and ``cancel JOB``. A Slurm job id (``1234``, ``1234_5``) is this
engine's own kind of id (``claims``): ``logs 1234`` reaches it without ``--engine``."""

from __future__ import annotations

import os
from pathlib import Path

from runner.engines.slurm import job_cancel, controller, job_output, job_state, node
from runner.engines.slurm.script import SCRIPT_FILE
from runner.errors import UsageError
from runner.options import Selection
from runner.ui import Output

# squeue's fields for ps, '|'-separated: id, name, state, elapsed, node count, nodes or reason,
# the batch script (the runner's jobs run its job.sbatch), the owner.
_FORMAT = "%i|%j|%T|%M|%D|%R|%o|%U"
_KEYS = ("job_id", "name", "slurm_state", "elapsed", "nodes", "where", "script", "uid")


def claims(name: str) -> bool:
    from runner.engines.slurm.node import is_job_id

    return is_job_id(name)


def _job(sel: Selection, verb: str) -> str:
    if not sel.names:
        raise UsageError(f"`{verb}` needs a Slurm job id", f"primus-runner {verb} 1234")
    return sel.names[0]


def status(sel: Selection, out: Output) -> int:
    return job_state.cmd_status(_job(sel, "status"), out)


def cancel(sel: Selection, out: Output) -> int:
    return job_cancel.cmd_cancel(_job(sel, "cancel"), out, dry_run=sel.dry_run)


def logs(sel: Selection, out: Output) -> int:
    from runner.context import load_context

    context = load_context(sel.sources, out=out)
    out.use_masker(context.scope.masker)  # secret references too: values a job printed from a store
    return job_output.job_logs(_job(sel, "logs"), out, follow=sel.follow, node=sel.node, tail=sel.tail,
                         output_dir=context.config.get("slurm", "output_dir"))


def queued(all_users: bool = False) -> list[dict]:
    """The runner's jobs Slurm still knows (the invoking user's, unless ``all_users``): those whose
    batch script is a runner job directory's ``job.sbatch``."""
    command = [controller.tool("squeue"), "-h", "-o", _FORMAT] + ([] if all_users else ["-u", str(os.getuid())])
    result = node.run(command, timeout=20)
    if result.returncode != 0:
        from runner.errors import EngineUnavailable

        raise EngineUnavailable(f"squeue failed: {result.stderr.strip()}", "check that slurmctld is running (scontrol ping)")
    rows = []
    for line in result.stdout.splitlines():
        row = dict(zip(_KEYS, line.split("|", len(_KEYS) - 1)))
        if len(row) == len(_KEYS) and Path(row["script"]).name == SCRIPT_FILE:
            row["state"] = job_state.STATES.get(row["slurm_state"], "running")
            rows.append(row)
    return rows


def ps(sel: Selection, out: Output) -> int:
    rows = queued(sel.all_users)
    if out.json_mode:
        out.json([{k: row[k] for k in ("job_id", "name", "state", "slurm_state", "elapsed", "nodes", "where", "uid")} for row in rows])
        return 0
    if not rows:
        out.info("no primus-runner Slurm jobs in the queue" + ("" if sel.all_users else " of yours (--all-users lists every user's)"))
        return 0
    header = ("JOBID", "NAME", "STATE", "TIME", "NODES", "NODELIST(REASON)") + (("UID",) if sel.all_users else ())
    table = [header] + [(r["job_id"], r["name"], r["slurm_state"], r["elapsed"], r["nodes"], r["where"])
                        + ((r["uid"],) if sel.all_users else ()) for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        out.result("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0
