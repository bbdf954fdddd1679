"""Streamed answers: read as one file, front to back (``docker save``), as JSON messages (pull, build),
or as the frames of an attached container's multiplexed stdout and stderr (``Demux``)."""

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


class Demux:
    """Splits Docker's multiplexed stream into (stream, bytes) pieces as bytes arrive.

    Frame header: ``[stream, 0, 0, 0, size (4 bytes big-endian)]``; stream 1 is
    stdout, 2 stderr. Payloads are passed on without waiting for a whole frame, so
    output is real-time; adjacent pieces of one stream are joined to keep the
    per-piece cost (masking, write syscalls) per read, not per frame.
    """

    __slots__ = ("_header", "_left", "_stream")

    def __init__(self) -> None:
        self._header = b""
        self._left = 0
        self._stream = 1

    def feed(self, data) -> list[tuple[int, bytes]]:
        out: list[tuple[int, list]] = []
        pos, n = 0, len(data)
        left, stream = self._left, self._stream
        while pos < n:
            if left:
                take = left if left <= n - pos else n - pos
                if out and out[-1][0] == stream:
                    out[-1][1].append(data[pos:pos + take])
                else:
                    out.append((stream, [data[pos:pos + take]]))
                pos += take
                left -= take
                continue
            need = 8 - len(self._header)
            if self._header or n - pos < 8:
                self._header += bytes(data[pos:pos + need])
                pos += min(need, n - pos)
                if len(self._header) < 8:
                    break
                header, self._header = self._header, b""
            else:
                header = bytes(data[pos:pos + 8])
                pos += 8
            stream = 2 if header[0] != 1 else 1
            left = int.from_bytes(header[4:8], "big")
        self._left, self._stream = left, stream
        return [(s, b"".join(parts)) for s, parts in out]
