"""A detached container's end, kept in its run's record before the container can go.

A detached job's output is in its run's log already (the keeper writes it, masked:
``runner.engines.docker.keeper``); its exit code is the engine's until its container goes.
``runs`` records it the first time it sees the container ended, and ``down`` before it
removes the container: whatever happens first, ``runs show RUN`` tells it afterwards.
"""

from __future__ import annotations

import os
import time

from runner.runs import record


def finished(info: dict) -> bool:
    state = info.get("State") or {}
    return not (state.get("Running") or state.get("Status") in ("created", "running", "paused", "restarting"))


def before_down(names: tuple[str, ...], all_mine: bool, sources, out) -> None:
    """``down``: the end of each named (or, with ``--all``, every) detached run of yours whose container
    is still there, into its record (``interrupted`` for one still running)."""
    from runner.errors import RunnerError
    from runner.runs.reading import open_store
    from runner.runs.store import StoreError

    try:
        store = open_store()
        if store is None:
            return
        uid = os.getuid()
        recs = store.list(uid=uid, state="running") if all_mine else [r for n in names for r in store.find(n, uid)[:1]]
    except (RunnerError, StoreError):
        return  # down goes on: the store's own problem is `runs`'s to tell
    for rec in recs:
        if not (rec.get("detached") and rec.get("container_id")) or rec.get("state") != "running":
            continue
        try:
            _end_one(store, rec)
        except (RunnerError, StoreError, OSError) as exc:
            out.warn(f"the end of run {rec['id']} could not be recorded before down ({exc}); down goes on")


def _end_one(store, rec: dict) -> None:
    from runner.clients.engine_api import ApiError
    from runner.clients.engine_api.shared import engine_at
    from runner.runs.reading import engine_time

    eng = engine_at(rec.get("engine_host"))
    try:
        info = eng.inspect(rec["container_id"])
    except ApiError:
        return  # gone already: nothing to tell
    state = info.get("State") or {}
    if finished(info):
        record.finish(rec, state.get("ExitCode"), engine_time(state.get("FinishedAt")) or time.time())
    else:
        record.finish(rec, None, time.time(), "interrupted")
        rec["note"] = "stopped by `primus-runner down`; its output until then is kept"
    store.put(rec)
