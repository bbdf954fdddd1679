"""Where the runner keeps runs: one documented state location, and the run ids.

``$XDG_STATE_HOME/primus-runner`` (default ``~/.local/state/primus-runner``) holds
``runs.db`` (the store) and ``runs/<id>/`` (one directory per run). Paths inside it
are stored relative to it, so the whole directory can be moved.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

CONTAINER_ROOT = "/primus-runner"  # where the runner's own mounts appear inside a job


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"  # XDG: a relative value is ignored
    return root / "primus-runner"


def runs_dir() -> Path:
    return state_dir() / "runs"


def db_path() -> Path:
    return state_dir() / "runs.db"


def cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if base and os.path.isabs(base) else Path.home() / ".cache") / "primus-runner"


def new_run_id() -> str:
    """Sortable by start (local time) and unique enough for concurrent launches: 20261201-103512-3fa9c1."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + os.urandom(3).hex()  # secrets.token_hex, without its imports


def stored(path: str | os.PathLike | None) -> str | None:
    """A path as the store keeps it: relative to the state directory when inside it."""
    if path is None:
        return None
    try:
        return str(Path(path).relative_to(state_dir()))
    except ValueError:
        return str(path)


def resolved(path: str | None) -> Path | None:
    """The stored form back to an absolute path (against today's state directory)."""
    if not path:
        return None
    p = Path(path)
    return p if p.is_absolute() else state_dir() / p
