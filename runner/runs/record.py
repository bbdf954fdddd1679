"""One run's record: names, paths, ids and codes, never a value.

What went with a run: its id, engine, name, host, user, the runner's command
line and the job's command, the image and its digest, the config files and
their hash, the GPUs, the forwarded variable NAMES, exit code, start and end,
the tracker run ids and links, where the tracker outputs and the log are. The
record is built from names only, refuses to serialise a ``Secret`` (json raises)
and is masked once more with the run's masker before it is stored.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import sys
from datetime import datetime, timezone

from runner.runs import paths

STATES = ("running", "succeeded", "failed", "interrupted", "lost", "unknown", "error")
FINISHED = ("succeeded", "failed", "interrupted", "lost", "unknown", "error")


def iso(moment: float | None) -> str | None:
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, tz=timezone.utc).isoformat(timespec="seconds")


def state_for(code: int | None) -> str:
    if code is None:
        return "unknown"
    if code == 0:
        return "succeeded"
    return "interrupted" if code in (130, 143) else "failed"


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def initial(run_id: str, plan, engine: str, *, started: float, run_dir, log, outputs, cache: dict | None, sources,
            detached: bool, pid_start: str | None, job_dir=None) -> dict:
    """The record at launch (state ``running``); ``update`` fills in the rest."""
    from runner.trackers import recorded

    return {
        "id": run_id,
        "engine": engine,
        "name": plan.job.name,
        "host": socket.gethostname(),
        "user": _user(),
        "uid": os.getuid(),
        "pid": os.getpid(),
        "pid_start": pid_start,
        "cwd": os.getcwd(),
        "argv": ["primus-runner", *sys.argv[1:]],
        "command": list(plan.job.command),
        "image": plan.container.image,
        "image_digest": None,
        "config_files": list(plan.job.config_files),
        "config_hash": plan.job.trackers.config_hash,
        "sources": {"config_file": sources.config_file, "env_file": sources.env_file},
        "gpus": {"flavor": plan.job.gpu, "devices": list(plan.container.devices), "request": plan.container.gpu_request,
                 "selected": _jsonable(plan.job.gpus)},
        "env": [{"name": d.name, "secret": d.secret} for d in plan.job.forwarded],
        "mounts": [{"source": m.source, "target": m.target, "mode": m.mode} for m in plan.container.mounts],
        "detached": detached,
        "state": "running",
        "exit_code": None,
        "started_ts": started,
        "ended_ts": None,
        "started": iso(started),
        "ended": None,
        "job_id": None,
        "container": None,
        "engine_host": None,
        "trackers": {"enabled": list(plan.job.trackers.enabled), "run_ids": {}, "links": {}, **recorded(plan)},
        "outputs": [o.to_dict() for o in outputs],
        "cache": cache,
        "run_dir": paths.stored(run_dir),
        "job_dir": paths.stored(job_dir),
        "log": paths.stored(log),
    }


def _jsonable(value):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "__dataclass_fields__"):
        return {k: _jsonable(getattr(value, k)) for k in value.__dataclass_fields__}
    return str(value)


def duration_text(seconds: float) -> str:
    """A run's length as people read it: ``4.2 s`` under a minute, else ``m:ss`` or ``h:mm:ss``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    h, rest = divmod(int(seconds), 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def finish(record: dict, code: int | None, ended: float, state: str | None = None) -> None:
    record.update(exit_code=code, ended_ts=ended, ended=iso(ended), state=state or state_for(code))


def masked(record: dict, masker) -> dict:
    """The record once more through the run's masker: a value that reached a name or path is ``***``."""
    text = json.dumps(record, sort_keys=True)
    return json.loads(masker.mask(text)) if masker is not None else record


def public(record: dict) -> dict:
    """What ``runs --json`` and ``runs show`` print: paths absolute again, internal stamps left out."""
    doc = {k: v for k, v in record.items() if k not in ("started_ts", "ended_ts", "pid_start")}
    for key in ("run_dir", "job_dir", "log"):
        value = paths.resolved(record.get(key))
        doc[key] = str(value) if value else None
    return doc
