"""Reading runs: the store as ``runs`` and ``logs`` open it, a run's own masker, an engine's times."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from datetime import datetime

from runner.errors import RuntimeFailure
from runner.runs import paths
from runner.runs.store import Store, StoreError


def open_store(create: bool = False) -> Store | None:
    """The store, None when there is none yet; a broken one is an error that says what is wrong."""
    if not paths.db_path().exists():
        return None
    try:
        return Store.open(create=create)
    except StoreError as exc:
        raise RuntimeFailure(exc.message, exc.hint) from None


def engine_time(stamp: str | None) -> float | None:
    """An engine's RFC 3339 time (``FinishedAt``) as a timestamp; None for the zero time."""
    if not stamp or stamp.startswith("0001"):
        return None
    try:
        return datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@contextmanager
def _in(directory: str | None):
    """Run a block in the run's own directory (its ./.primus.yaml and ./.env) when it still exists."""
    here = os.getcwd()
    moved = False
    if directory and os.path.isdir(directory):
        try:
            os.chdir(directory)
            moved = True
        except OSError:
            pass
    try:
        yield
    finally:
        if moved:
            os.chdir(here)


def run_scope(rec: dict, sources, out):
    """The run's own secret scope: its directory's config and env file, its secret references resolved."""
    from runner.options import Sources
    from runner.context import load_context
    from runner.errors import RunnerError

    own = rec.get("sources") or {}
    try:
        with _in(rec.get("cwd")):
            return load_context(Sources(own.get("config_file") or sources.config_file, own.get("env_file") or sources.env_file), out=out).scope
    except RunnerError:
        return load_context(sources, out=out).scope


def run_masker(rec: dict, sources, out):
    """The masker of the run's own secret scope (``run_scope``)."""
    return run_scope(rec, sources, out).masker


def running_named(name: str) -> dict | None:
    """This user's newest running run named ``name`` (a container's name is its run's), if any."""
    store = open_store()
    if store is None:
        return None
    try:
        return next((rec for rec in store.find(name, uid=os.getuid()) if rec.get("state") == "running" and rec.get("container_id")), None)
    finally:
        store.close()
