"""A recording proxy for an engine's unix socket: every HTTP request a client makes, in order.

``RecordingProxy(upstream, path)`` listens on ``path`` and forwards every connection to
``upstream`` byte for byte; on the way it parses the client's requests (request line,
headers, a ``Content-Length`` body) into ``requests``. After a request that upgrades the
connection (``attach``, ``exec start``) the rest of that connection is a raw stream and
is not parsed. The client under test sees the engine itself: nothing is changed.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Recorded:
    method: str
    target: str  # path and query as sent
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.partition("?")[2]

    def json(self):
        return json.loads(self.body)


class RecordingProxy:
    def __init__(self, upstream: str, path: str):
        self.upstream, self.path = upstream, path
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def __enter__(self) -> "RecordingProxy":
        if os.path.exists(self.path):
            os.unlink(self.path)
        self._server.bind(self.path)
        self._server.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.close()
        if os.path.exists(self.path):
            os.unlink(self.path)

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.upstream)
            threading.Thread(target=self._client_side, args=(client, upstream), daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()

    def _client_side(self, client: socket.socket, upstream: socket.socket) -> None:
        buffer, parsing = b"", True
        for data in _forwarded(client, upstream):
            if parsing:
                buffer, parsing = self._parse(buffer + data)

    def _parse(self, buffer: bytes) -> tuple[bytes, bool]:
        """Record every complete request in ``buffer``; (what is left, still HTTP)."""
        while b"\r\n\r\n" in buffer:
            head, _, rest = buffer.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            length = int(headers.get("content-length") or 0)
            if len(rest) < length:
                return buffer, True
            method, target = lines[0].split(" ")[:2]
            with self._lock:
                self.requests.append(Recorded(method, target, rest[:length]))
            buffer = rest[length:]
            if headers.get("upgrade"):
                return b"", False
        return buffer, True


def _forwarded(src: socket.socket, dst: socket.socket):
    """Copy ``src`` to ``dst`` until either closes, yielding each chunk once it is sent; at ``src``'s end,
    half-close ``dst`` (the other direction may still carry the answer)."""
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        if not data:
            _half_close(dst)
            return
        try:
            dst.sendall(data)
        except OSError:
            return
        yield data


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    for _ in _forwarded(src, dst):
        pass


def _half_close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
