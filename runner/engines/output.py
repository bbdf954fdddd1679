"""The job's output on its way to the terminal, written once for every engine: masked, fed
to the run's tail (the tracker's log upload), then written in large writes."""

from __future__ import annotations

import os
from typing import BinaryIO

from runner.engines.base import Tail
from runner.secrets import Masker


class Sink:
    """One output stream of the job. ``target``: a file descriptor, or a binary file (its
    descriptor when it has one; a file without one, e.g. a test's buffer, is written to)."""

    def __init__(self, target: BinaryIO | int, masker: Masker, tail: Tail | None):
        self._stream = masker.stream()
        self._tail = tail
        self._fd: int | None = None
        self._file: BinaryIO | None = None
        if isinstance(target, int):
            self._fd = target
        else:
            try:
                target.flush()
                self._fd = target.fileno()
            except (AttributeError, OSError, ValueError):
                self._file = target

    def write(self, data: bytes) -> None:
        self._emit(self._stream.feed(data))

    def close(self) -> None:
        self._emit(self._stream.flush())
        if self._file is not None:
            self._file.flush()

    def _emit(self, data: bytes) -> None:
        if not data:
            return
        if self._tail is not None:
            self._tail.add(data)
        if self._file is not None:
            self._file.write(data)
            return
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._fd, view)
            except BrokenPipeError:
                return
            view = view[written:]
