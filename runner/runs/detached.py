"""A detached container's output, kept in its run's log before the container can go.

A detached job's output is the engine's (the runner is not there to write it), so
it would go with the container. It is copied, masked with the run's own scope, into
the run's ``output.log`` the first time the runner sees the container ended
(``runs``, ``logs``), and by ``down`` before it removes the container: whatever
happens first, ``logs RUN`` shows it afterwards from any directory.
"""

from __future__ import annotations

import os
import time
from urllib.parse import quote

from runner.runs import paths, record


def keep(eng, rec: dict, masker) -> bool:
    """Copy the container's output (masked) into the run's log, unless it is kept already; True when copied."""
    from runner.clients.engine_api import Demux

    log = paths.resolved(rec.get("log"))
    if log is None or log.exists():
        return False
    stream = masker.stream()
    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return False
    with os.fdopen(fd, "wb") as fh:
        demux = Demux()
        for piece in eng.stream(f"/containers/{quote(rec['container_id'])}/logs", {"stdout": 1, "stderr": 1}):
            for _, data in demux.feed(piece):
                fh.write(stream.feed(data))
        fh.write(stream.flush())
    return True


def finished(info: dict) -> bool:
    state = info.get("State") or {}
    return not (state.get("Running") or state.get("Status") in ("created", "running", "paused", "restarting"))


def before_down(names: tuple[str, ...], all_mine: bool, sources, out) -> None:
    """``down``: the output of each named (or, with ``--all``, every) detached run of yours whose container
    is still there, into its run's log, and the end of one that ended, into its record."""
    from runner.errors import RunnerError
    from runner.runs.reading import open_store, run_masker
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
            _keep_one(store, rec, run_masker(rec, sources, out))
        except (RunnerError, StoreError, OSError) as exc:
            out.warn(f"the output of run {rec['id']} could not be kept before down ({exc}); down goes on")


def _keep_one(store, rec: dict, masker) -> None:
    from runner.clients.engine_api import ApiError
    from runner.clients.engine_api.shared import engine_at
    from runner.runs.reading import engine_time

    eng = engine_at(rec.get("engine_host"))
    try:
        info = eng.inspect(rec["container_id"])
    except ApiError:
        return  # gone already: nothing to keep
    keep(eng, rec, masker)
    state = info.get("State") or {}
    if finished(info):
        record.finish(rec, state.get("ExitCode"), engine_time(state.get("FinishedAt")) or time.time())
    else:
        record.finish(rec, None, time.time(), "interrupted")
        rec["note"] = "stopped by `primus-runner down`; its output until then is kept"
    store.put(rec)

