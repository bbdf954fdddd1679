"""A thin Docker Engine API client on the standard library, for the hot path of ``up``.

Why not the docker SDK here: importing it (requests, urllib3, charset_normalizer)
costs more than the whole 100 ms overhead budget of ``up`` over ``docker run``.
The Engine API is plain HTTP/JSON on a unix socket, and the few calls a launch
needs (create, attach, start, wait, inspect, remove) fit in this module. The SDK
stays available as ``runner.engines.docker.client()`` for everything else.

``DOCKER_HOST`` is honoured: ``unix://PATH`` (default ``/var/run/docker.sock``),
``tcp://HOST:PORT`` (TLS when ``DOCKER_TLS_VERIFY``/``DOCKER_CERT_PATH`` is set).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from typing import Any, Iterator
from urllib.parse import quote, urlencode

from runner.errors import EngineUnavailable

# Docker 20.10 speaks 1.41; newer daemons accept it (their minimum is 1.24).
API_PREFIX = "/v1.41"
START_HINT = "start it: sudo systemctl start docker (or dockerd &)"


class ApiError(Exception):
    """The daemon answered with an HTTP error; ``message`` is the daemon's own text."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def docker_host() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float | None):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def _tls_context():
    import ssl

    cert_path = os.environ.get("DOCKER_CERT_PATH") or os.path.expanduser("~/.docker")
    ctx = ssl.create_default_context(cafile=os.path.join(cert_path, "ca.pem"))
    ctx.load_cert_chain(os.path.join(cert_path, "cert.pem"), os.path.join(cert_path, "key.pem"))
    if not os.environ.get("DOCKER_TLS_VERIFY"):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


class Engine:
    """One keep-alive connection for request/response calls; dedicated ones for streams."""

    def __init__(self, host: str | None = None, timeout: float = 120.0):
        self.host = host or docker_host()
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        if self.host.startswith("unix://"):
            self._unix = self.host[len("unix://"):]
        elif self.host.startswith("tcp://"):
            self._unix = None
            hostport = self.host[len("tcp://"):].rstrip("/")
            self._addr = hostport.rsplit(":", 1)[0], int(hostport.rsplit(":", 1)[1]) if ":" in hostport else 2375
            self._tls = bool(os.environ.get("DOCKER_TLS_VERIFY") or os.environ.get("DOCKER_CERT_PATH"))
        else:
            raise EngineUnavailable(
                f"DOCKER_HOST={self.host} is not supported by primus-runner (unix:// or tcp:// only)",
                hint="forward the remote socket (ssh -L /tmp/docker.sock:/var/run/docker.sock HOST) and use unix://",
            )

    # -- connections --------------------------------------------------------
    def _new_conn(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._unix is not None:
            return _UnixConnection(self._unix, timeout)
        if self._tls:
            return http.client.HTTPSConnection(*self._addr, timeout=timeout, context=_tls_context())
        return http.client.HTTPConnection(*self._addr, timeout=timeout)

    def _unreachable(self, exc: BaseException) -> EngineUnavailable:
        return EngineUnavailable(f"Docker daemon is not reachable at {self.host} ({exc.__class__.__name__}: {exc})", hint=START_HINT)

    def reset(self) -> None:
        """Drop the keep-alive connection (after an interrupted request left it mid-response)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @staticmethod
    def path(path: str, params: dict | None = None) -> str:
        url = API_PREFIX + path
        if params:
            url += "?" + urlencode({k: v for k, v in params.items() if v is not None})
        return url

    # -- request/response ---------------------------------------------------
    def request(self, method: str, path: str, params: dict | None = None, body: Any = None, timeout: float | None = -1.0) -> Any:
        """One call; returns the decoded JSON (or None). Raises ``ApiError`` / ``EngineUnavailable``."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        url = self.path(path, params)
        for attempt in (0, 1):
            reused = self._conn is not None
            if self._conn is None:
                self._conn = self._new_conn(self.timeout)
            conn = self._conn
            conn.timeout = self.timeout if timeout == -1.0 else timeout
            if conn.sock is not None:
                conn.sock.settimeout(conn.timeout)
            try:
                conn.request(method, url, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self.reset()
                if reused and attempt == 0:
                    continue  # the daemon closed an idle keep-alive connection: retry once
                raise self._unreachable(exc) from None
            except (FileNotFoundError, ConnectionRefusedError, PermissionError, socket.gaierror) as exc:
                self.reset()
                raise self._unreachable(exc) from None
            except BaseException:
                self.reset()
                raise
            if resp.getheader("Connection", "").lower() == "close":
                self.reset()
            if resp.status >= 400:
                raise ApiError(resp.status, _message(raw))
            if not raw:
                return None
            if "json" in (resp.getheader("Content-Type") or ""):
                return json.loads(raw)
            return raw
        raise AssertionError("unreachable")

    def head(self, path: str, params: dict | None = None) -> int:
        """Status of a HEAD request (e.g. does a path exist in a container)."""
        conn = self._new_conn(self.timeout)
        try:
            conn.request("HEAD", self.path(path, params))
            resp = conn.getresponse()
            resp.read()
            return resp.status
        except OSError as exc:
            raise self._unreachable(exc) from None
        finally:
            conn.close()

    def stream(
        self, path: str, params: dict | None = None, method: str = "GET", body: bytes | None = None, headers: dict | None = None
    ) -> Iterator[bytes]:
        """A streamed response body (logs, build progress), yielding pieces as they arrive.

        Each stream has its own connection: the response can last as long as a build.
        """
        conn = self._new_conn(None)
        try:
            try:
                conn.request(method, self.path(path, params), body=body, headers=headers or {})
                resp = conn.getresponse()
            except OSError as exc:
                raise self._unreachable(exc) from None
            if resp.status >= 400:
                raise ApiError(resp.status, _message(resp.read()))
            while True:
                piece = resp.read1(1 << 20)
                if not piece:
                    return
                yield piece
        finally:
            conn.close()

    def attach(self, container_id: str, stdin: bool) -> tuple[socket.socket, bytes]:
        """Hijack an attach connection; returns the raw socket and any stream bytes already read.

        Done by hand (not through http.client) because the connection stops being
        HTTP after the 101 response, and the runner needs the socket itself: to
        half-close its write side (the job's stdin EOF) and to ``recv_into`` big buffers.
        """
        params = {"stream": 1, "stdout": 1, "stderr": 1, "stdin": 1 if stdin else 0}
        url = self.path(f"/containers/{quote(container_id)}/attach", params)
        try:
            if self._unix is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(self._unix)
            else:
                sock = socket.create_connection(self._addr)
                if self._tls:
                    sock = _tls_context().wrap_socket(sock, server_hostname=self._addr[0])
        except OSError as exc:
            raise self._unreachable(exc) from None
        request = (
            f"POST {url} HTTP/1.1\r\nHost: docker\r\nContent-Type: text/plain\r\n"
            "Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n"
        ).encode()
        sock.sendall(request)
        head = b""
        while b"\r\n\r\n" not in head:
            piece = sock.recv(4096)
            if not piece:
                sock.close()
                raise ApiError(500, "the daemon closed the attach connection")
            head += piece
        header, _, rest = head.partition(b"\r\n\r\n")
        status = int(header.split(b" ", 2)[1])
        if status >= 400:
            sock.close()
            raise ApiError(status, _message(rest))
        return sock, rest

    # -- the calls a launch needs --------------------------------------------
    def ping(self) -> None:
        self.request("GET", "/_ping", timeout=5.0)

    def create(self, name: str, config: dict) -> str:
        return self.request("POST", "/containers/create", {"name": name}, config)["Id"]

    def start(self, cid: str) -> None:
        self.request("POST", f"/containers/{quote(cid)}/start")

    def wait(self, cid: str) -> int:
        return int(self.request("POST", f"/containers/{quote(cid)}/wait", timeout=None)["StatusCode"])

    def inspect(self, cid: str) -> dict:
        return self.request("GET", f"/containers/{quote(cid)}/json")

    def stop(self, cid: str, grace: float | None = None) -> None:
        params = {"t": int(grace)} if grace is not None else None
        try:
            self.request("POST", f"/containers/{quote(cid)}/stop", params, timeout=None)
        except ApiError as exc:
            if exc.status not in (304, 404):
                raise

    def kill(self, cid: str) -> None:
        try:
            self.request("POST", f"/containers/{quote(cid)}/kill")
        except ApiError as exc:
            if exc.status not in (404, 409):
                raise

    def remove(self, cid: str) -> None:
        try:
            self.request("DELETE", f"/containers/{quote(cid)}", {"force": 1, "v": 1})
        except ApiError as exc:
            if exc.status != 404 and "already in progress" not in exc.message:
                raise

    def containers(self, labels: list[str], all: bool = True) -> list[dict]:
        filters = json.dumps({"label": labels})
        return self.request("GET", "/containers/json", {"all": 1 if all else 0, "filters": filters})


def _message(raw: bytes) -> str:
    try:
        return str(json.loads(raw).get("message", "")) or raw.decode(errors="replace").strip()
    except (ValueError, AttributeError):
        return raw.decode(errors="replace").strip()


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
