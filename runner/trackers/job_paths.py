"""Where a path inside the job is on the host: under the deepest mount that holds it, as in the
container (the tracker outputs are mounted by path, ``runner.runs.outputs``)."""

from __future__ import annotations

import posixpath
from typing import Iterable


def covering(mounts: Iterable, path: str):
    """The mount (``.source``, ``.target``) whose target holds ``path``; the deepest one wins."""
    best = None
    for m in mounts:
        target = m.target.rstrip("/") or "/"
        if path == target or path.startswith(target.rstrip("/") + "/"):
            if best is None or len(target) > len(best.target):
                best = m
    return best


def host_path(mounts: Iterable, path: str) -> str | None:
    """``path`` (absolute, inside the job) on the host: through its mount, or itself under none (a job on the
    host); None under a named volume, which has no host path the runner may write to."""
    path = posixpath.normpath(path)
    mount = covering(mounts, path)
    if mount is None:
        return path
    if getattr(mount, "named_volume", False):
        return None
    rest = posixpath.relpath(path, mount.target)
    return mount.source if rest == "." else posixpath.join(mount.source, rest)


def holds(directory, pattern: str) -> bool:
    """Whether ``directory`` (a host ``Path``) holds a file matching ``pattern`` at any depth: what makes
    a tracker output's path worth naming after the job."""
    try:
        return any(p.is_file() for p in directory.rglob(pattern))
    except OSError:
        return False
