"""A Slurm run in the run store (``runner.runs``): where its job's files go, what its record says once
it runs, and its end and output read back later. ``runner.runs`` asks these through the engine's
methods (``SlurmEngine.job_dir`` …), never by the engine's name.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from runner.runs import paths

def job_dir(config, run_id: str, name: str) -> Path:
    """``<slurm.output_dir>/<run id>-<name>`` when it is set, else the run's own ``slurm/`` under the
    state directory (the recorder checks that the nodes see it); the record points there."""
    base = config.get("slurm", "output_dir", default=None) if config is not None else None
    if not base:
        return paths.runs_dir() / run_id / "slurm"
    return Path(os.path.expanduser(str(base))).absolute() / f"{run_id}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}"


def unseen(path: Path) -> str | None:
    """Why the nodes do not see ``path``; None when they do, or when it cannot be told."""
    from runner.engines.slurm.shared_fs import nodes_see

    seen, reason = nodes_see(path)
    return f"the Slurm nodes do not see the state directory {path}: {reason}" if seen is False else None


def started(launched, job_dir: Path | None = None) -> dict:
    """The record's fields once the job is queued: its id, its files, its output, its nodes, as the
    request that queued it (``launched.state["request"]``, a ``SlurmRequest``) decided them."""
    request = launched.state["request"]
    return {"job_id": launched.id, "nodes": request.settings.nodes, "job_dir": paths.stored(request.job_dir),
            "log": paths.stored(Path(request.job_dir) / f"slurm-{launched.id}.out")}


def ended(rec: dict) -> tuple[int | None, str | None] | None:
    """A detached job's end, asked once (``scontrol``, the nodes' exit files): (exit code, note), or
    None while it runs or when Slurm cannot be asked."""
    from runner.engines.slurm import job_state
    from runner.errors import EngineUnavailable

    if not rec.get("job_id") or not shutil.which("scontrol"):
        return None
    job_dir = paths.resolved(rec.get("job_dir"))
    try:
        state = job_state.job_state(rec["job_id"])
    except EngineUnavailable:
        return None
    if state is not None and not state.done:
        return None
    code = job_state.final_exit_code(state, job_dir, rec["job_id"]) if job_dir is not None else (state.exit_code if state else None)
    return code, None if state is not None else "Slurm no longer knows the job; the exit code is from its nodes' exit files"


def logs(rec: dict, out, *, follow: bool, tail: int | None, node: str | None) -> int:
    """``logs RUN`` of a recorded Slurm run: the job's output files, rank by rank."""
    from runner.engines.slurm import job_output

    job_dir = paths.resolved(rec.get("job_dir"))
    return job_output.job_logs(rec["job_id"], out, follow=follow, node=node, tail=tail, output_dir=str(job_dir.parent) if job_dir else None)
