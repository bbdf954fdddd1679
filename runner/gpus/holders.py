"""Which GPUs are taken, and the race-free claim of the ones a launch gets.

A GPU is held by a runner container that names it in its ``io.primus-runner.gpus``
label (created, running, paused or restarting; any user's), and — between the moment
a launch chooses and the moment its container exists — by that launch's lease: a file
``<uid>-<pid>.json`` in a host-wide lease directory, valid while its process lives.
Choosing and writing the lease happen under one ``flock`` on the directory's lock
file, so two launches racing for the same GPUs never both get them. The directory is
host-wide (``/tmp/primus-runner-gpus``, sticky, like ``/tmp``), not per user: two
users sharing a workstation must see each other's leases.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import time
from contextlib import contextmanager
from typing import Callable, Mapping, Sequence

from runner.gpus.model import Gpu, GpuError
from runner.gpus.selection import Selection, normal_uuid, pick_listed

LABEL_GPUS = "io.primus-runner.gpus"  # the UUIDs of the container's GPUs, comma separated
LEASE_DIR_ENV = "PRIMUS_RUNNER_GPU_LEASES"
_LIVE_STATES = ("created", "running", "paused", "restarting")
_my_leases: list[str] = []


def lease_dir() -> str:
    return os.environ.get(LEASE_DIR_ENV) or "/tmp/primus-runner-gpus"


def label_value(gpus: Sequence[Gpu]) -> str:
    return ",".join(g.uuid for g in gpus)


def container_holders(eng) -> dict[str, str]:
    """normalised UUID → the name of the runner container that holds it (``eng``: an Engine API client).
    Only the runner sets this label, on the containers it starts."""
    held: dict[str, str] = {}
    for item in eng.containers([LABEL_GPUS]):
        if item.get("State") not in _LIVE_STATES:
            continue
        name = (item.get("Names") or [item.get("Id", "")[:12]])[0].lstrip("/")
        for uuid in ((item.get("Labels") or {}).get(LABEL_GPUS) or "").split(","):
            if uuid:
                held.setdefault(normal_uuid(uuid), f"container {name}")
    return held


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def lease_holders(directory: str | None = None) -> dict[str, str]:
    """normalised UUID → the launch in progress that leased it (leases of dead processes are ignored)."""
    directory = directory or lease_dir()
    held: dict[str, str] = {}
    try:
        names = os.listdir(directory)
    except OSError:
        return held
    for entry in names:
        if not entry.endswith(".json"):
            continue
        try:
            doc = json.loads(open(os.path.join(directory, entry), encoding="utf-8").read())
            pid = int(doc["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if pid == os.getpid():
            continue
        if not _alive(pid):  # a launch that was killed: its lease holds nothing (its owner tidies it)
            if doc.get("uid") == os.getuid():
                try:
                    os.unlink(os.path.join(directory, entry))
                except OSError:
                    pass
            continue
        for uuid in doc.get("uuids", []):
            held.setdefault(normal_uuid(uuid), f"launch {doc.get('name', '?')} (pid {pid})")
    return held


def current(eng=None) -> dict[str, str]:
    """Every holder this process can see: the engine's containers (when it answers) and the leases."""
    held = lease_holders()
    if eng is not None:
        held.update(container_holders(eng))
    return held


def choose(selection: Selection, found: Sequence[Gpu], flavor: str, held: Mapping[str, str]) -> list[Gpu]:
    """The GPUs ``selection`` gets given who holds what. ``all`` is every GPU (not checked against
    holders: it is the default, and all means all); a LIST must be free; N takes the first N free."""
    if selection.kind == "all":
        return list(found)
    if selection.kind == "list":
        chosen = pick_listed(selection, found, flavor)
        taken = [(g, held[normal_uuid(g.uuid)]) for g in chosen if normal_uuid(g.uuid) in held]
        if taken:
            raise GpuError(f"--gpus {selection.text}: " + "; ".join(f"GPU {g.index} is held by {who}" for g, who in taken),
                           hint="choose free GPUs (primus-runner check --gpu " + flavor + " shows who holds which), or --gpus N")
        return chosen
    if selection.count > len(found):
        raise GpuError(f"--gpus {selection.count}: this host has {len(found)} {flavor} GPU{'s' if len(found) != 1 else ''}",
                       hint=f"ask for at most {len(found)}")
    free = [g for g in found if normal_uuid(g.uuid) not in held]
    if len(free) < selection.count:
        holders = sorted({who for g in found for who in [held.get(normal_uuid(g.uuid))] if who})
        raise GpuError(f"--gpus {selection.count}: only {len(free)} of {len(found)} {flavor} GPUs are free; "
                       f"the others are held by {', '.join(holders)}",
                       hint="wait for those jobs, ask for fewer, or stop yours with primus-runner down NAME")
    return free[:selection.count]


@contextmanager
def _locked(directory: str):
    os.makedirs(directory, exist_ok=True)
    try:
        if os.stat(directory).st_uid == os.getuid():
            os.chmod(directory, 0o1777)  # every user leases here; sticky: nobody removes another's lease
    except OSError:
        pass
    path = os.path.join(directory, ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if os.fstat(fd).st_uid == os.getuid():
            os.fchmod(fd, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def claim(selection: Selection, found: Sequence[Gpu], flavor: str, name: str,
          containers: Callable[[], Mapping[str, str]]) -> list[Gpu]:
    """Choose under the lock and lease the choice until this process ends (its container's label
    holds the GPUs from then on). ``containers`` lists the holders the engine knows."""
    directory = lease_dir()
    with _locked(directory):
        held = {**lease_holders(directory), **containers()}
        chosen = choose(selection, found, flavor, held)
        if selection.kind != "all":
            path = os.path.join(directory, f"{os.getuid()}-{os.getpid()}.json")
            doc = {"pid": os.getpid(), "uid": os.getuid(), "name": name, "uuids": [g.uuid for g in chosen], "created": time.time()}
            tmp = f"{path}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(doc, fh)
            os.replace(tmp, path)
            if not _my_leases:
                atexit.register(release)
            _my_leases.append(path)
    return chosen


def release() -> None:
    """Drop this process's leases (at exit; a killed process's lease is ignored as stale)."""
    while _my_leases:
        try:
            os.unlink(_my_leases.pop())
        except OSError:
            pass
