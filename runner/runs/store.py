"""The run store: SQLite in WAL mode, from the standard library.

Many launches on one host write at the same time (WAL lets readers go on while
one writer commits; ``busy_timeout`` queues the writers), and a runner killed
mid-write leaves the last committed state: SQLite's transactions are atomic. A
store that cannot be opened or written is a ``StoreError`` with what is wrong and
the fix; the launch turns it into one warning and goes on.

Each row keeps the record as JSON (the truth) and the few fields ``runs`` filters
and sorts by as columns.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from pathlib import Path
from typing import Iterable

from runner.runs import paths

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    uid INTEGER, user TEXT, host TEXT, engine TEXT, name TEXT, state TEXT,
    exit_code INTEGER, started REAL, ended REAL, job_id TEXT,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_started ON runs(started);
CREATE INDEX IF NOT EXISTS runs_name ON runs(name);
CREATE INDEX IF NOT EXISTS runs_job ON runs(job_id);
"""
COLUMNS = ("uid", "user", "host", "engine", "name", "state", "exit_code", "started", "ended", "job_id")
_CHANGING = ("engine", "state", "exit_code", "ended", "job_id", "record")  # what a later write of a run may change


class StoreError(Exception):
    """The store cannot be used: ``message`` says what is wrong, ``hint`` what to do."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.message, self.hint = message, hint


def explain(exc: BaseException, path: Path) -> StoreError:
    """What an sqlite3/OS error means for the user, in one message with the fix."""
    text = str(exc).lower()
    where = path.parent
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "full" in text:
        return StoreError(f"the disk holding the run store {path} is full", f"free space on it, or set XDG_STATE_HOME to another disk")
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return StoreError(f"the run store {path} is corrupt ({exc})",
                          f"move it away (mv {path} {path}.broken); the next launch starts a new store")
    if isinstance(exc, PermissionError) or "readonly" in text or "read-only" in text or "unable to open" in text or "permission" in text:
        return StoreError(f"the state directory {where} is not writable ({exc})",
                          "fix its permissions, or set XDG_STATE_HOME to a writable directory")
    if "locked" in text or "busy" in text:
        return StoreError(f"the run store {path} stayed locked for 15 s ({exc})", "another primus-runner holds it; retry")
    return StoreError(f"the run store {path} cannot be used ({type(exc).__name__}: {exc})",
                      f"move it away (mv {path} {path}.broken) if the problem stays")


LOW_SPACE = 256 << 10  # less than this free: a launch's record and log would not fit for long


def space_problem(path: Path) -> StoreError | None:
    """The disk holding ``path`` (the state directory) full or nearly: what ``runs`` says, since a launch
    that could not write its record there could not write that either."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if free >= LOW_SPACE:
        return None
    return StoreError(f"the disk holding the state directory {path} is full ({free >> 10} KiB free): "
                      "launches run, but their records and output are not kept",
                      "free space on it, or set XDG_STATE_HOME to another disk")


class Store:
    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn, self.path = conn, path

    @classmethod
    def open(cls, path: Path | None = None, create: bool = True, launch: bool = False) -> "Store":
        """``launch``: a launch's connection (``runner.runs.writer``), which never checkpoints on its
        own: not on a commit, not at close (where Python lets it say so)."""
        path = path or paths.db_path()
        try:
            if create:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                if not path.exists():
                    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))  # the store is the user's alone
            elif not path.exists():
                raise StoreError(f"no run store yet at {path}", "every launch records its run there")
            conn = sqlite3.connect(path, timeout=15.0, isolation_level=None, check_same_thread=False)  # one writer at a time: the recorder joins its thread
            conn.row_factory = sqlite3.Row
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a commit survives a crash of the process
            if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                conn.executescript("BEGIN IMMEDIATE;" + _SCHEMA + f"PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
            if launch:
                conn.execute("PRAGMA wal_autocheckpoint=0")
                if hasattr(sqlite3, "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE"):  # Python 3.12+
                    conn.setconfig(sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, True)
            return cls(conn, path)
        except StoreError:
            raise
        except (sqlite3.Error, OSError) as exc:
            raise explain(exc, path) from None

    def close(self) -> None:
        self.conn.close()

    def checkpoint_if_over(self, wal_bytes: int) -> None:
        """A passive checkpoint (it waits for no reader or writer) once the WAL has passed ``wal_bytes``."""
        try:
            if os.path.getsize(f"{self.path}-wal") > wal_bytes:
                self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except (OSError, sqlite3.Error):
            pass  # the next one, or `runs` closing the store, checkpoints it

    # ---------------------------------------------------------------- writes
    def put(self, record: dict) -> None:
        """Insert or update one record (one atomic statement)."""
        row = {k: record.get(k) for k in COLUMNS}
        row["started"], row["ended"] = record.get("started_ts"), record.get("ended_ts")
        text = json.dumps(record, sort_keys=True)  # a Secret refuses to serialise: none can slip in
        cols = ("id", *COLUMNS, "record")
        try:
            # An upsert, not INSERT OR REPLACE (a delete and an insert): a later write of a run changes its
            # row in place and leaves the indexes alone unless what they index changed.
            self.conn.execute(f"INSERT INTO runs ({','.join(cols)}) VALUES ({','.join('?' * len(cols))}) ON CONFLICT(id) DO UPDATE SET "
                              + ", ".join(f"{c} = excluded.{c}" for c in _CHANGING), (record["id"], *(row[k] for k in COLUMNS), text))
        except sqlite3.Error as exc:
            raise explain(exc, self.path) from None

    def delete(self, ids: Iterable[str]) -> int:
        ids = list(ids)
        try:
            self.conn.executemany("DELETE FROM runs WHERE id = ?", [(i,) for i in ids])
        except sqlite3.Error as exc:
            raise explain(exc, self.path) from None
        return len(ids)

    # ---------------------------------------------------------------- reads
    def get(self, run_id: str) -> dict | None:
        row = self._one("SELECT record FROM runs WHERE id = ?", (run_id,))
        return json.loads(row["record"]) if row else None

    def find(self, key: str, uid: int | None = None) -> list[dict]:
        """Records a user may mean by ``key``: a run id (or its unique prefix), a Slurm job id, a name.
        Newest first."""
        mine = "" if uid is None else " AND uid = ?"
        extra = () if uid is None else (uid,)
        for sql, args in (("id = ?", (key,)), ("job_id = ?", (key,)), ("name = ?", (key,)),
                          ("id LIKE ? ESCAPE '\\'", (_like_prefix(key),))):
            rows = self._all(f"SELECT record FROM runs WHERE {sql}{mine} ORDER BY started DESC, id DESC", (*args, *extra))
            if rows:
                return [json.loads(r["record"]) for r in rows]
        return []

    def list(self, limit: int | None = None, uid: int | None = None, state: str | None = None,
             engine: str | None = None, name: str | None = None) -> list[dict]:
        where, args = [], []
        for column, value in (("uid", uid), ("state", state), ("engine", engine), ("name", name)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = "SELECT record FROM runs" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY started DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [json.loads(r["record"]) for r in self._all(sql, tuple(args))]

    def ids_and_names(self, uid: int | None = None, limit: int = 200) -> list[tuple[str, str]]:
        """(id, name) of the newest runs, for shell completion: one indexed query, no JSON."""
        mine = "" if uid is None else " WHERE uid = ?"
        rows = self._all(f"SELECT id, name FROM runs{mine} ORDER BY started DESC LIMIT ?", ((uid,) if uid is not None else ()) + (limit,))
        return [(r["id"], r["name"] or "") for r in rows]

    def older_than(self, moment: float) -> list[dict]:
        return [json.loads(r["record"]) for r in self._all("SELECT record FROM runs WHERE started < ? ORDER BY started", (moment,))]

    def _one(self, sql: str, args: tuple):
        try:
            return self.conn.execute(sql, args).fetchone()
        except sqlite3.Error as exc:
            raise explain(exc, self.path) from None

    def _all(self, sql: str, args: tuple) -> list:
        try:
            return self.conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise explain(exc, self.path) from None


def _like_prefix(key: str) -> str:
    return key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def run_ids(uid: int | None = None, limit: int = 200) -> list[tuple[str, str]]:
    """(run id, name) of the newest runs, for completion; [] when there is no store yet or it is broken."""
    path = paths.db_path()
    if not path.exists():
        return []
    try:
        store = Store.open(path, create=False)
        try:
            return store.ids_and_names(uid if uid is not None else os.getuid(), limit)
        finally:
            store.close()
    except StoreError:
        return []

