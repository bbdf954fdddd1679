"""What ``logs``/``down``/``status``/``cancel``/``exec`` complete to: the runner's own runs, containers and jobs.

Called by the completion scripts as ``primus-runner __complete KIND`` on TAB, so it
answers from the runner's own state and never fails loudly: run ids, job names and
Slurm job ids from the run store (``runner.runs``: one indexed query), Slurm job ids
also from the job directories (``primus-runs/*/slurm-<JOB>.out``), and the names of
the invoking user's runner containers from the engine by label, with a short timeout.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

KINDS = ("containers", "jobs", "names")  # names: runs, containers and jobs (logs takes any)
_JOB_OUT = re.compile(r"^slurm-(\d+(?:_\d+)?)\.out$")


def job_ids(bases: list[Path]) -> list[str]:
    """Slurm job ids of the runner's job directories, newest first."""
    found: list[tuple[float, str]] = []
    for base in bases:
        try:
            for out in base.glob("*/slurm-*.out"):
                match = _JOB_OUT.match(out.name)
                if match:
                    found.append((out.stat().st_mtime, match.group(1)))
        except OSError:
            continue
    return [job for _, job in sorted(found, reverse=True)]


def stored(limit: int = 50) -> tuple[list[str], list[str]]:
    """(run ids and names, Slurm job ids) of the invoking user's newest runs, from the run store."""
    from runner.runs.store import Store, StoreError, run_ids
    from runner.runs import paths

    names = [word for run_id, name in run_ids(limit=limit) for word in (run_id, name) if word]
    jobs: list[str] = []
    if paths.db_path().exists():
        try:
            store = Store.open(paths.db_path(), create=False)
            try:
                from runner.engines import engines_with

                with_jobs = engines_with("status")  # the engines whose ids `status`/`cancel` take
                jobs = [str(r["job_id"]) for r in store.list(limit=limit, uid=os.getuid()) if r.get("job_id") and r.get("engine") in with_jobs]
            finally:
                store.close()
        except StoreError:
            pass
    return names, jobs


def container_names(timeout: float = 1.0) -> list[str]:
    """The invoking user's runner containers (by label), or nothing when no engine answers."""
    from runner.clients.engine_api.shared import engine_client
    from runner.launch_plan import LABEL, LABEL_OWNER

    try:
        eng = engine_client()
        eng.timeout = timeout
        items = eng.containers([f"{LABEL}=true", f"{LABEL_OWNER}={os.getuid()}"])
    except Exception:  # noqa: BLE001 - a TAB must never print a traceback
        return []
    return [((item.get("Names") or [""])[0]).lstrip("/") for item in items if item.get("Names")]


def candidates(kind: str) -> list[str]:
    try:
        names, jobs = stored()
    except Exception:  # noqa: BLE001 - a broken store still completes what the engine knows
        names, jobs = [], []
    jobs = jobs + job_ids([Path.cwd() / "primus-runs"])
    if kind == "jobs":
        found = jobs
    elif kind == "containers":
        found = container_names()
    else:
        found = names + container_names() + jobs
    return list(dict.fromkeys(found))


def run(out, *, kind: str) -> int:
    """``__complete KIND``: the candidates, one per line, for the completion scripts."""
    import sys

    sys.stdout.write("".join(f"{name}\n" for name in candidates(kind)))
    return 0
