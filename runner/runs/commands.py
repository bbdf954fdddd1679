"""``runs``, ``runs show``, ``runs gc`` and ``logs RUN|NAME|JOB``: reading the store, from any directory.

A record that still says ``running`` is checked before it is shown: an attached
run whose runner no longer holds its lock is ``lost`` (killed, SIGKILL included);
a detached container or Slurm job is asked once for its end (one engine call, or
the job's exit files and one ``scontrol``), and the answer is stored.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import time
from pathlib import Path

from runner.errors import RuntimeFailure, UsageError
from runner.runs import liveness, paths, record
from runner.runs.logdir import read_lines, follow as follow_file
from runner.runs.reading import engine_time, open_store, run_masker
from runner.runs.store import Store, StoreError


# ---------------------------------------------------------------- reconcile
def reconcile(store: Store, rec: dict) -> dict:
    """The record with what can be told now about a run that still says ``running``; stored when it changed."""
    if rec.get("state") != "running":
        return rec
    before = dict(rec)
    if not rec.get("detached"):
        if rec.get("host") == socket.gethostname():
            alive = liveness.runner_alive(paths.resolved(rec.get("run_dir")), rec.get("pid"), rec.get("pid_start"))
            if alive is False:
                rec.update(state="lost", note="the runner ended without recording the job's end (killed, SIGKILL included); "
                                              "the log so far is kept")
    elif (ended := _asked_end(rec)) is not None:  # the engine asks its own (Slurm: scontrol)
        record.finish(rec, ended[0], time.time())
        if ended[1]:
            rec["note"] = ended[1]
    elif rec.get("container_id"):
        _reconcile_container(rec)
    if rec != before:
        try:
            store.put(rec)
        except StoreError:
            pass  # shown all the same; stored next time
    return rec


def _reconcile_container(rec: dict) -> None:
    from runner.clients.engine_api import ApiError
    from runner.clients.engine_api.shared import engine_at
    from runner.errors import EngineUnavailable
    from runner.runs import detached

    try:
        eng = engine_at(rec.get("engine_host"))
        info = eng.inspect(rec["container_id"])
    except ApiError as exc:
        if exc.status == 404:
            rec.update(state="unknown", note="its container was removed before its end was seen")
        return
    except (EngineUnavailable, OSError):
        return
    if not detached.finished(info):
        return
    state = info.get("State") or {}
    record.finish(rec, state.get("ExitCode"), engine_time(state.get("FinishedAt")) or time.time())


def _asked_end(rec: dict):
    """A detached run's end as its engine tells it (``record_ended``), or None."""
    engine = _engine_of(rec)
    return None if engine is None else engine.record_ended(rec)


def _engine_of(rec: dict):
    """The registered engine a record names; None for one the registry does not hold (``podman``: the
    docker engine's kind, read here through the record's container and socket)."""
    from runner.engines import ENGINES, engine_for

    name = rec.get("engine")
    return engine_for(name) if name in ENGINES else None


# ---------------------------------------------------------------- runs
def cmd_runs(out, *, all_users: bool = False, limit: int | None = None, state: str | None = None,
             engine: str | None = None, name: str | None = None) -> int:
    from runner.runs.store import space_problem

    store = open_store()
    full = space_problem(paths.state_dir()) if paths.state_dir().exists() else None
    if full is not None:
        out.warn(f"{full.message}; fix: {full.hint}")
    uid = None if all_users else os.getuid()
    rows = []
    if store is not None:
        shown = limit if limit is not None else (None if out.json_mode else 20)
        try:
            rows = [reconcile(store, r) for r in store.list(None if state else shown, uid=uid, engine=engine, name=name)]
        except StoreError as exc:
            raise RuntimeFailure(exc.message, exc.hint) from None
        if state:
            rows = [r for r in rows if r.get("state") == state][:shown] if shown else [r for r in rows if r.get("state") == state]
    if out.json_mode:
        out.json([record.public(r) for r in rows])
        return 0
    if not rows:
        out.info(f"no runs recorded in {paths.state_dir()}" + ("" if all_users else " for you (--all lists every user's)"))
        return 0
    header = ("ID", "STATE", "EXIT", "ENGINE", "NAME", "STARTED", "DURATION") + (("USER",) if all_users else ()) + ("COMMAND",)
    table = [_row(r, all_users) for r in rows]
    if out.color and sys.stdout.isatty():
        out.result(_coloured(header, table))
        return 0
    table.insert(0, header)
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        out.result("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


# A state's colour on a terminal: done well, done badly, still going, not known.
_STATE_STYLE = {"succeeded": "green", "failed": "red", "interrupted": "yellow", "running": "cyan",
                "lost": "magenta", "unknown": "magenta", "error": "red"}
COMMAND_WIDTH = 48  # the command column's width; the whole command is in `runs show`


def _coloured(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """The runs table for a terminal (rich), each state in its colour; rendered to text, so it is masked as it is printed."""
    import io
    import shutil

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for i, name in enumerate(header):  # every column whole; the command's is cut to what is left
        widest = max(len(row[i]) for row in [header, *rows])
        table.add_column(name, no_wrap=True, overflow="ellipsis", min_width=None if name == "COMMAND" else widest)
    state = header.index("STATE")
    for row in rows:
        cells = [escape(cell) for cell in row]
        style = _STATE_STYLE.get(row[state])
        if style:
            cells[state] = f"[{style}]{cells[state]}[/{style}]"
        table.add_row(*cells)
    buffer = io.StringIO()
    Console(file=buffer, force_terminal=True, width=shutil.get_terminal_size().columns, highlight=False).print(table)
    return buffer.getvalue().rstrip("\n")


def _row(r: dict, all_users: bool) -> tuple[str, ...]:
    started, ended = r.get("started_ts"), r.get("ended_ts")
    duration = record.duration_text((ended or time.time()) - started) if started and (ended or r.get("state") == "running") else "-"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if started else "-"
    code = "-" if r.get("exit_code") is None else str(r["exit_code"])
    command = " ".join(r.get("command") or [])
    if len(command) > COMMAND_WIDTH:
        command = command[:COMMAND_WIDTH - 1] + "…"
    return ((r["id"], r.get("state") or "?", code, r.get("engine") or "?", r.get("name") or "", when, duration)
            + ((r.get("user") or "?",) if all_users else ()) + (command,))


def find(store: Store | None, key: str, all_users: bool = True) -> dict | None:
    if store is None:
        return None
    try:
        found = store.find(key, None if all_users else os.getuid())
    except StoreError as exc:
        raise RuntimeFailure(exc.message, exc.hint) from None
    return reconcile(store, found[0]) if found else None


def cmd_show(key: str, out) -> int:
    rec = find(open_store(), key)
    if rec is None:
        raise UsageError(f"no run {key} recorded", "list the runs with `primus-runner runs`")
    doc = record.public(rec)
    if out.json_mode:
        out.json(doc)
        return 0
    for field in ("id", "state", "exit_code", "engine", "name", "host", "user", "started", "ended", "image", "image_digest",
                  "command", "argv", "config_files", "config_hash", "gpus", "job_id", "container", "run_dir", "job_dir", "log", "note"):
        value = doc.get(field)
        if value in (None, [], {}):
            continue
        shown = (" ".join(value) if field in ("command", "argv") else _gpus_text(value) if field == "gpus"
                 else ", ".join(value) if isinstance(value, list) else value)
        out.result(f"{field:13} {shown}")
    env = doc.get("env") or []
    if env:
        out.result(f"{'env':13} " + ", ".join(e["name"] + (" (secret)" if e.get("secret") else "") for e in env))
    trackers = doc.get("trackers") or {}
    for name, run_id in (trackers.get("run_ids") or {}).items():
        out.result(f"{'tracker':13} {name} run {run_id}" + (f": {trackers['links'][name]}" if name in (trackers.get("links") or {}) else ""))
    for o in doc.get("outputs") or []:
        out.result(f"{'output':13} {o['tracker']} {o['path']} -> {o['host'] or o['note']}")
    if doc.get("state") != "running":  # what the outputs hold now the job has ended, as `up` says it at the end
        from runner.runs.outputs import TrackerOutput, after

        from runner.trackers import as_recorded

        kept = [TrackerOutput(**o) for o in doc.get("outputs") or []]
        for line in after(kept, as_recorded(trackers), trackers.get("run_ids") or {}):
            out.result(f"{'':13} {line}")
    if doc.get("cache"):
        out.result(f"{'cache':13} {doc['cache'].get('host') or doc['cache'].get('node_dir') + ' (on each node)'} -> {doc['cache']['target']}")
    return 0


def _gpus_text(gpus: dict) -> str:
    """The record's GPUs as text: the flavor, the chosen GPUs (index and UUID), the devices."""
    chosen = [f"{g.get('index')} ({g.get('uuid')})" for g in gpus.get("selected") or [] if isinstance(g, dict)]
    devices = gpus.get("devices") or []
    return (str(gpus.get("flavor") or "-") + (f": {', '.join(chosen)}" if chosen else "")
            + (f"; devices {', '.join(devices)}" if devices else ""))


# ---------------------------------------------------------------- gc
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    m = _DURATION.match(text.strip().lower())
    if not m:
        raise UsageError(f"--older-than {text!r} is not a duration", "a number and a unit: 30d, 12h, 90m, 45s, 2w")
    return float(m.group(1)) * _UNIT[m.group(2)]


def cmd_gc(older_than: str, out, dry_run: bool = False) -> int:
    """Remove finished runs started before now minus ``older_than``, and their directories."""
    age = parse_duration(older_than)
    store = open_store()
    if store is None:
        out.info("no runs recorded yet")
        return 0
    try:
        old = [reconcile(store, r) for r in store.older_than(time.time() - age)]
    except StoreError as exc:
        raise RuntimeFailure(exc.message, exc.hint) from None
    mine = [r for r in old if r.get("uid") == os.getuid() and r.get("state") != "running"]
    removed = []
    for r in mine:
        dirs = [d for d in (_run_dir_of(r), _job_dir_of(r)) if d is not None and d.exists()]
        if dry_run:
            out.info(f"would remove run {r['id']} ({r.get('name')})" + "".join(f", {d}" for d in dirs))
            continue
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
        removed.append(r["id"])
    if removed:
        try:
            store.delete(removed)
        except StoreError as exc:
            raise RuntimeFailure(exc.message, exc.hint) from None
    kept = len(old) - len(mine)
    if not dry_run:
        out.info(f"removed {len(removed)} run{'s' if len(removed) != 1 else ''} older than {older_than}"
                 + (f"; {kept} left (running, or another user's)" if kept else ""))
    return 0


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")  # paths.new_run_id's: no '/', no '..'


def _run_dir_of(r: dict) -> Path | None:
    """The run's own directory, ``runs/<id>`` of the state directory, whatever the record says:
    the store is shared and group-writable, so a record is no authority on what to delete."""
    if not _RUN_ID.fullmatch(str(r["id"])):
        return None
    run_dir = paths.runs_dir() / str(r["id"])
    if run_dir.is_symlink() or paths.resolved(r.get("run_dir")) != run_dir:
        return None
    return run_dir if _yours(run_dir) else None


def _job_dir_of(r: dict) -> Path | None:
    """A Slurm job directory the runner made for this run (named for it, holding its plan file, yours)."""
    job_dir = paths.resolved(r.get("job_dir"))
    if job_dir is None or not job_dir.name.startswith(r["id"]) or not (job_dir / "plan.json").exists():
        return None
    return job_dir if not job_dir.is_symlink() and _yours(job_dir) else None


def _yours(directory: Path) -> bool:
    try:
        return directory.stat().st_uid == os.getuid()
    except OSError:
        return False


# ---------------------------------------------------------------- logs
def recorded_logs(key: str, out, sources, *, follow: bool = False, tail: int | None = None, node: str | None = None) -> int | None:
    """``logs RUN|NAME|JOB`` for a recorded run; None when no record matches (the caller tries the engines)."""
    try:
        rec = find(open_store(), key, all_users=False)
    except RuntimeFailure as exc:
        out.warn(f"{exc.message}; looking for {key} without the run store")
        return None
    if rec is None:
        return None
    if tail is not None and tail < 0:
        raise UsageError("--tail takes a number of lines (0 or more)")
    masker = run_masker(rec, sources, out)
    out.use_masker(masker)
    engine = _engine_of(rec)
    own = None if engine is None else engine.record_logs(rec, out, follow=follow, tail=tail, node=node)
    if own is not None:  # the engine's own files (Slurm: the job's output, rank by rank)
        return own
    if node is not None:
        raise UsageError(f"--node is for a Slurm job; run {rec['id']} ran on {rec.get('engine')}", "primus-runner logs JOB_ID --node 1")
    log = paths.resolved(rec.get("log"))
    if log is None or not (log.exists() or log.with_name(log.name + ".1").exists()):
        raise UsageError(f"run {rec['id']} has no log" + (f" ({rec.get('note')})" if rec.get("note") else ""),
                         "its run directory was removed (runs gc), or the run was not recorded (runs.record: false)")
    lines, position = read_lines(log, tail)
    stream = masker.stream()
    write = sys.stdout.buffer.write
    try:
        for line in lines:
            write(stream.feed(line))
        if follow and rec.get("state") == "running":  # the runner, or a detached job's keeper, still writes it
            run_dir = paths.resolved(rec.get("run_dir"))
            alive = lambda: liveness.runner_alive(run_dir, rec.get("pid"), rec.get("pid_start")) is not False  # noqa: E731
            for chunk in follow_file(log, position, alive):
                write(stream.feed(chunk))
                sys.stdout.buffer.flush()
    finally:  # the masked tail held back, also when Ctrl-C ends a follow (`logs -f`)
        write(stream.flush())
        sys.stdout.buffer.flush()
    return 0
