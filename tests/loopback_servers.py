"""Every server the tests stand up: on loopback, on a free port, in a daemon thread, bounded in time.

``Server(answer)`` is the one HTTP(S) server: it listens on 127.0.0.1 (plain http,
or https with a throw-away certificate for ``127.0.0.1`` and ``localhost`` from
:func:`make_cert`), records every request in ``server.requests`` (method, path,
headers, body) and answers each with ``answer(server, request)`` -> ``(status,
headers, body)``. Hostile servers, fake registries and stores, and fronts that
forward to a real server are answer functions on it. Two servers on different
ports (or 127.0.0.1 vs localhost) are two origins. :func:`silent_listener` (and
:func:`silent_unix_listener`) accept connections and never answer; :class:`ByteRecorder` keeps what a client
sends to a non-HTTP service; :class:`RecordingProxy` records the HTTP requests a
client sends to an engine's unix socket on their way through (or stands in for
another engine).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

CONNECTION_TIMEOUT = 30.0  # seconds a connection may stay silent


@dataclass(frozen=True)
class Cert:
    cert: Path
    key: Path


def make_cert(directory: Path) -> Cert:
    """A self-signed certificate for 127.0.0.1 and localhost (point SSL_CERT_FILE at ``cert`` to trust it)."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return Cert(cert, key)


Answer = Callable[["Server", dict], "tuple[int, dict, bytes | dict]"]


class _Closing:
    """``with server:`` closes it at the end of the block."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Server(_Closing):
    """``answer`` served on ``address`` (127.0.0.1; the Docker bridge's only for a build step to reach it):
    ``port``, ``netloc`` (``host_name``:port), ``url`` (``https`` with ``tls``), ``requests``, ``close()``."""

    def __init__(self, answer: Answer, tls: Cert | None = None, host_name: str = "127.0.0.1",
                 address: str = "127.0.0.1"):
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            timeout = CONNECTION_TIMEOUT  # a client that stalls cannot hold a thread past the test

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                request = {"method": self.command, "path": self.path, "headers": dict(self.headers),
                           "body": self.rfile.read(length)}
                outer.requests.append(request)
                status, headers, body = answer(outer, request)
                data = json.dumps(body).encode() if isinstance(body, dict) else body
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((address, 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls.cert, tls.key)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.netloc = f"{host_name}:{self.port}"
        self.url = f"{'https' if tls else 'http'}://{self.netloc}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def raw(self) -> str:
        """Everything this server received, for a leak check."""
        return json.dumps(self.requests, default=lambda b: b.decode("utf-8", "replace"))


def json_answer(status: int = 200, body: dict | None = None) -> Answer:
    """Every request answered with ``status`` and ``body`` as JSON."""
    return lambda _server, _request: (status, {"Content-Type": "application/json"}, body or {})


def redirect_answer(target: str, status: int = 302) -> Answer:
    """Every request answered with a redirect to ``target`` + the same path."""
    return lambda _server, request: (status, {"Location": target + request["path"]}, b"")


@contextlib.contextmanager
def silent_listener():
    """The port of a listener on 127.0.0.1 that never answers: connections complete in the kernel's backlog."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


@contextlib.contextmanager
def silent_unix_listener(path: Path):
    """A unix socket listening on ``path`` that never answers (an engine's socket, alive)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))
        sock.listen(8)
        yield path



class ByteRecorder(_Closing):
    """A TCP listener on 127.0.0.1 that answers nothing and keeps every byte each connection sent, in
    ``received`` (one entry a connection): a stand-in for a non-HTTP service, such as an attacker's
    slurmctld. A connection that stays silent for ``idle`` seconds is closed."""

    def __init__(self, idle: float = 2.0):
        self.idle = idle
        self.received: list[bytes] = []
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen()
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self) -> None:
        self._sock.close()

    def _serve(self) -> None:
        for conn in _accepted(self._sock):
            with conn:
                conn.settimeout(self.idle)
                data = b""
                try:
                    while chunk := conn.recv(65536):
                        data += chunk
                except OSError:
                    pass
                self.received.append(data)


# ------------------------------------------------------------------ engine sockets

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


Intercept = Callable[["Recorded"], "bytes | str | None"]


class RecordingProxy:
    """Listens on ``path`` and forwards every connection to ``upstream`` byte for byte; on the way it parses
    the client's requests (request line, headers, a ``Content-Length`` body) into ``requests``. After a request
    that upgrades the connection (``attach``, ``exec start``) the rest of that connection is a raw stream and
    is not parsed. The client under test sees the engine itself: nothing is changed.

    With ``intercept`` the proxy stands in for another engine: each request is first given to it, which
    returns the raw answer to send without asking ``upstream`` (bytes), the target to forward it to instead
    (str), or None to forward it as sent. A forwarded request then has the connection to itself (its
    ``Connection`` header says close, or Upgrade), so a local answer is never interleaved with the engine's."""

    def __init__(self, upstream: str, path: str, intercept: Intercept | None = None):
        self.upstream, self.path, self.intercept = upstream, path, intercept
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def __enter__(self) -> "RecordingProxy":
        if os.path.exists(self.path):
            os.unlink(self.path)
        self._server.bind(self.path)
        self._server.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.close()
        if os.path.exists(self.path):
            os.unlink(self.path)

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def _connect_upstream(self) -> socket.socket:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(self.upstream)
        return upstream

    def _accept(self) -> None:
        for client in _accepted(self._server):
            if self.intercept is not None:
                threading.Thread(target=self._intercepting, args=(client,), daemon=True).start()
                continue
            upstream = self._connect_upstream()
            threading.Thread(target=self._client_side, args=(client, upstream), daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()

    def _client_side(self, client: socket.socket, upstream: socket.socket) -> None:
        buffer, parsing = b"", True
        for data in _forwarded(client, upstream):
            buffer += data if parsing else b""
            while parsing and (parsed := _request(buffer)) is not None:
                request, _, buffer, upgrade = parsed
                self._record(request)
                parsing = not upgrade

    def _intercepting(self, client: socket.socket) -> None:
        buffer = b""
        try:
            while True:
                while (parsed := _request(buffer)) is None:
                    piece = client.recv(65536)
                    if not piece:
                        return
                    buffer += piece
                request, head, buffer, upgrade = parsed
                self._record(request)
                decision = self.intercept(request)
                if isinstance(decision, bytes):
                    client.sendall(decision)
                    continue
                upstream = self._connect_upstream()
                upstream.sendall(_rewritten(head, decision, upgrade) + request.body + buffer)
                back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
                back.start()
                _pipe(client, upstream)
                back.join()
                upstream.close()
                return
        except OSError:
            pass
        finally:
            client.close()

    def _record(self, request: "Recorded") -> None:
        with self._lock:
            self.requests.append(request)


def _request(buffer: bytes) -> "tuple[Recorded, list[str], bytes, bool] | None":
    """The first complete request in ``buffer``: (it, its head's lines, what follows it, whether it upgrades
    the connection); None while it is incomplete."""
    if b"\r\n\r\n" not in buffer:
        return None
    head, _, rest = buffer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length") or 0)
    if len(rest) < length:
        return None
    method, target = lines[0].split(" ")[:2]
    return Recorded(method, target, rest[:length]), lines, rest[length:], bool(headers.get("upgrade"))


def _rewritten(head: list[str], target: str | None, upgrade: bool) -> bytes:
    """The request head with ``target`` (when given) and a ``Connection`` header that ends the connection after
    this request (or keeps the upgrade)."""
    method, sent, protocol = head[0].split(" ", 2)
    keep = [line for line in head[1:] if line.partition(":")[0].strip().lower() != "connection"]
    lines = [f"{method} {target or sent} {protocol}", *keep, "Connection: Upgrade" if upgrade else "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _accepted(listener: socket.socket):
    """Each connection ``listener`` accepts, until it is closed."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        yield conn


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
