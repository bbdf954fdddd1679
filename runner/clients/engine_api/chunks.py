"""A streamed response (``docker save``, a build context) read as one file, front to back."""

from __future__ import annotations

import io
from typing import Iterable


class _Pieces(io.RawIOBase):
    """A raw file over the pieces of a streamed response, read once."""

    def __init__(self, pieces: Iterable[bytes]):
        self._pieces = iter(pieces)
        self._piece = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._piece:
            piece = next(self._pieces, None)
            if piece is None:
                return 0
            self._piece = memoryview(piece)
        n = min(len(buffer), len(self._piece))
        buffer[:n] = self._piece[:n]
        self._piece = self._piece[n:]
        return n


def pieces_reader(pieces: Iterable[bytes], buffer_size: int = 1 << 20) -> io.BufferedReader:
    """A buffered file over ``pieces``, for ``tarfile``'s stream mode (it reads in 10 KB records)."""
    return io.BufferedReader(_Pieces(pieces), buffer_size)
