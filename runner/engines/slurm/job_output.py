"""The job's output file, rank by rank: labelled lines, masked, followed as it grows; ``logs JOB``."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

from runner.engines.base import TAIL_LIMIT
from runner.engines.slurm.job_state import Backoff, FILE_POLL, POLL_FIRST, job_state
from runner.engines.slurm.node import hostnames, require_job_id
from runner.errors import UsageError
from runner.secrets import Masker
from runner.ui import Output


# The agents run under `srun --label`: each line of the job's file is "RANK: text" (padded to the
# widest rank); lines without a label come from the batch script itself.
_LABEL = re.compile(rb"^ *(\d+): (.*)$", re.S)


class RankLines:
    """The job file's lines as ``[RANK] text`` (or JSON lines ``{"rank", "node", "line"}``), masked."""

    def __init__(self, masker: Masker, write, json_lines: bool, rank: int | None = None, nodes: list[str] | None = None):
        self.masker, self.write, self.json_lines, self.only, self.nodes = masker, write, json_lines, rank, nodes or []
        self._pending: list[bytes] = []  # the unfinished line, in pieces: joined once, when it ends (linear in its length)

    @property
    def pending(self) -> bytes:
        return b"".join(self._pending)

    @pending.setter
    def pending(self, value: bytes) -> None:
        self._pending = [value] if value else []

    def feed(self, chunk: bytes) -> None:
        if b"\n" not in chunk:
            if chunk:
                self._pending.append(chunk)
            return
        first, *lines, rest = chunk.split(b"\n")
        self._pending.append(first)
        self.line(b"".join(self._pending))
        for line in lines:
            self.line(line)
        self._pending = [rest] if rest else []

    def close(self) -> None:
        if self._pending:
            self.line(b"".join(self._pending))
            self._pending = []

    @staticmethod
    def split(raw: bytes) -> tuple[int | None, bytes]:
        m = _LABEL.match(raw)
        return (int(m.group(1)), m.group(2)) if m else (None, raw)

    def line(self, raw: bytes) -> None:
        rank, body = self.split(raw)
        if self.only is not None and rank != self.only:
            return
        text = self.masker.mask(body.decode("utf-8", "replace").rstrip("\r"))
        if self.json_lines:
            node = self.nodes[rank] if rank is not None and rank < len(self.nodes) else None
            self.write(json.dumps({"rank": rank, "node": node, "line": text}) + "\n")
        else:
            self.write(f"[{'job' if rank is None else rank}] {text}\n")


class Follower:
    """Reads what was added to a file since the last call (a local read: cheap to repeat)."""

    def __init__(self, path: Path, lines: RankLines, position: int = 0):
        self.path, self.lines, self.position = path, lines, position

    def pump(self) -> bool:
        try:
            with open(self.path, "rb") as fh:
                if os.fstat(fh.fileno()).st_size < self.position:
                    self.position = 0  # truncated (a requeued run without append): from the start
                fh.seek(self.position)
                chunk = fh.read(1 << 20)
        except FileNotFoundError:
            return False
        if chunk:
            self.position += len(chunk)
            self.lines.feed(chunk)
        return bool(chunk)

    def close(self) -> None:
        self.lines.close()


def output_file_of(job_id: str, output_dir: Path | None) -> Path | None:
    """The job's output file: Slurm's StdOut while it knows the job, else the runner's job directories."""
    state = job_state(job_id) if shutil.which("scontrol") else None
    stdout = (state.fields.get("StdOut") if state else None) or ""
    if stdout and "%" not in stdout and (Path(stdout).exists() or not state.done):
        return Path(stdout)  # a pending job's file does not exist yet: -f waits for it
    for base in filter(None, (output_dir, Path.cwd() / "primus-runs")):
        found = sorted(Path(base).glob(f"*/slurm-{job_id}.out"))
        if found:
            return found[-1]
    return None


def _tail(path: Path, lines: RankLines, count: int) -> int:
    """Feed the last ``count`` lines (of the selected rank) to ``lines``; the file position after them."""
    from collections import deque

    kept: deque = deque(maxlen=count)
    with open(path, "rb") as fh:
        for raw in fh:
            if raw.endswith(b"\n") and (lines.only is None or RankLines.split(raw[:-1])[0] == lines.only):
                kept.append(raw[:-1])
            elif not raw.endswith(b"\n"):
                lines.pending = raw  # a line still being written
        position = fh.tell()
    for raw in kept:
        lines.line(raw)
    return position


def job_logs(job: str, out: Output, follow: bool = False, node: str | None = None, tail: int | None = None,
             output_dir: str | None = None) -> int:
    """``logs JOB [-f] [--node N] [--tail N]``: the job's output from every node, rank by rank."""
    job_id = require_job_id(job)
    path = output_file_of(job_id, Path(output_dir).expanduser() if output_dir else None)
    if path is None:
        raise UsageError(f"no output file of job {job_id} found", "run logs from the directory you submitted from (or where slurm.output_dir points)")
    state = job_state(job_id) if shutil.which("scontrol") else None
    nodes = hostnames(state.fields["NodeList"]) if state and state.fields.get("NodeList") not in (None, "", "(null)") else []
    rank = None
    if node is not None:
        rank = int(node) if node.isdigit() else (nodes.index(node) if node in nodes else None)
        if rank is None:
            raise UsageError(f"--node {node}: not a rank or a node of job {job_id}" + (f" ({', '.join(nodes)})" if nodes else ""), "pass a rank (0, 1, …) or a node name")
    lines = RankLines(out.masker, lambda text: (sys.stdout.write(text), sys.stdout.flush()), json_lines=out.json_mode, rank=rank, nodes=nodes)
    if tail is not None and path.exists():
        if tail < 0:
            raise UsageError("--tail takes a number of lines (0 or more)")
        position = _tail(path, lines, tail) if tail else path.stat().st_size
        lines.pending = lines.pending if tail else b""
    else:
        position = 0
    follower = Follower(path, lines, position)
    while follower.pump():  # all of it, however long, not only the first read
        pass
    if follow:
        backoff, key, next_poll = Backoff(), None, time.monotonic() + POLL_FIRST
        while state is not None and not state.done:
            if time.monotonic() >= next_poll:
                state = job_state(job_id)
                new = (state.slurm_state, state.fields.get("Restarts")) if state else None
                next_poll = time.monotonic() + backoff.next(new != key)
                key = new
                if state is None or state.done:
                    break
            if not follower.pump():
                time.sleep(FILE_POLL)
        follower.pump()
    follower.close()
    return 0


def output_tail(path: Path, limit: int = TAIL_LIMIT) -> bytes:
    """The last ``limit`` bytes of the job's (masked) output, for the tracker's log upload."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - limit))
            return fh.read()
    except OSError:
        return b""
