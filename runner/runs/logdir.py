"""A run's output log: the job's masked output as the runner streamed it, size-capped.

The runner writes what it prints (already masked) to ``output.log`` in the run
directory, unbuffered, so a runner killed mid-run leaves the log so far. The cap
(``runs.log_limit_mb``, default 128 MiB) is kept by rotation: when ``output.log``
reaches half the cap it becomes ``output.log.1`` (replacing the older half) and a
new ``output.log`` starts with a line saying so. The last half to whole of the
cap is always kept: a training job's end (its error) matters most.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Iterator

from runner.engines.base import Tail

LOG_NAME = "output.log"
DEFAULT_LIMIT_MB = 128


def rotated(path: Path) -> Path:
    return path.with_name(path.name + ".1")


class RunLog(Tail):
    """The tracker handshake's tail, which also appends every masked chunk to the run's log."""

    def __init__(self, path: Path, limit_bytes: int, warn: Callable[[str], None]):
        super().__init__()
        self.path, self.half, self.warn = path, max(limit_bytes // 2, 1 << 16), warn
        self._fd: int | None = None
        self._size = 0
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._size = os.fstat(self._fd).st_size
        except OSError as exc:
            warn(f"the run's log {path} cannot be written ({exc.strerror or exc}); the job's output is not kept")

    def add(self, data: bytes) -> None:
        self.keep(data)
        super().add(data)

    def kept_in(self) -> int | None:
        return self._fd

    def keep(self, data: bytes) -> None:
        if self._fd is not None and data:
            self._write(data)

    def _write(self, data: bytes) -> None:
        try:
            if self._size + len(data) > self.half:
                self._rotate()
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
            self._size += len(data)
        except OSError as exc:
            self.close()
            self.warn(f"the run's log {self.path} stopped at {self._size} bytes ({exc.strerror or exc}); the job goes on")

    def _rotate(self) -> None:
        os.close(self._fd)
        os.replace(self.path, rotated(self.path))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        note = f"[primus-runner: earlier output is in {rotated(self.path).name}; at most {self.half * 2 >> 20} MiB of output are kept]\n".encode()
        os.write(self._fd, note)
        self._size = len(note)

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None


def read_lines(path: Path, tail: int | None = None) -> tuple[list[bytes], int]:
    """The log's lines (the rotated half first), or the last ``tail``; and the position reached in ``path``."""
    from collections import deque

    kept: deque = deque(maxlen=tail) if tail is not None else deque()
    position = 0
    for part in (rotated(path), path):
        try:
            with open(part, "rb") as fh:
                for line in fh:
                    kept.append(line)
                if part == path:
                    position = fh.tell()
        except FileNotFoundError:
            continue
    return list(kept) if tail != 0 else [], position


def follow(path: Path, position: int, alive: Callable[[], bool], poll: float = 0.25) -> Iterator[bytes]:
    """What is appended to ``path`` after ``position`` while ``alive()`` (the run's runner holds its lock)."""
    while True:
        running = alive()
        try:
            with open(path, "rb") as fh:
                if os.fstat(fh.fileno()).st_size < position:
                    position = 0  # rotated: the new file from its start
                fh.seek(position)
                chunk = fh.read(1 << 20)
        except FileNotFoundError:
            chunk = b""
        if chunk:
            position += len(chunk)
            yield chunk
            continue
        if not running:
            return
        time.sleep(poll)
