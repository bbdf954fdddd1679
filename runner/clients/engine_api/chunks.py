"""Streamed answers: read as one file, front to back (``docker save``), or as JSON messages (pull, build)."""

from __future__ import annotations

import io
from typing import Iterable, Iterator


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


def json_messages(chunks: Iterable[bytes]) -> Iterator[dict]:
    """The JSON documents of a streamed answer (a pull's or a build's progress), whatever the
    chunk boundaries: a character or a document cut between two chunks waits for the rest.

    The daemon writes one JSON document per line; a line that is not JSON (a proxy's
    banner, a garbled write) is skipped, so it cannot hide the messages after it, an
    error included. Bytes that are not UTF-8 travel as surrogate escapes, so the masker
    still sees a secret's exact bytes.
    """
    import codecs
    import json

    decoder = json.JSONDecoder()
    text = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    buffer = ""
    for chunk in chunks:
        buffer += text.decode(chunk)
        pos = 0
        while True:
            while pos < len(buffer) and buffer[pos] in " \t\r\n":
                pos += 1
            if pos >= len(buffer):
                break
            try:
                message, end = decoder.raw_decode(buffer, pos)
            except ValueError:
                newline = buffer.find("\n", pos)
                if newline < 0:
                    break  # maybe a document cut by the chunk: wait for the rest of the line
                pos = newline + 1  # not JSON: skip the line
                continue
            if isinstance(message, dict):
                yield message
            pos = end
        buffer = buffer[pos:]
