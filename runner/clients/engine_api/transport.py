"""The Engine API's transport: where to connect (unix socket, TCP, TLS), one keep-alive
connection for request/response calls, dedicated ones for streams and hijacked sockets.

It knows URLs, not versions or calls: ``negotiation`` picks the version a path carries,
``api`` makes the calls.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from typing import Iterator

from runner.clients.engine_api import discovery
from runner.clients.engine_api.discovery import EngineLocation
from runner.errors import EngineUnavailable


class ApiError(Exception):
    """The daemon answered with an HTTP error; ``message`` is the daemon's own text."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float | None):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def _tls_context(location: EngineLocation):
    import ssl

    cert_path = location.cert_path or os.path.expanduser("~/.docker")
    ca = os.path.join(cert_path, "ca.pem")
    if location.tls_verify:
        ctx = ssl.create_default_context(cafile=ca if os.path.exists(ca) else None)
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    cert, key = os.path.join(cert_path, "cert.pem"), os.path.join(cert_path, "key.pem")
    if os.path.exists(cert) and os.path.exists(key):
        ctx.load_cert_chain(cert, key)
    return ctx


def _location_for(url: str, source: str) -> EngineLocation:
    tls = verify = False
    cert_path = None
    if url.startswith("tcp://"):
        tls, verify, cert_path = discovery._env_tls(os.environ)
    return EngineLocation(discovery._kind_of(url), url, source, tls, verify, cert_path)


def error_message(raw: bytes) -> str:
    """The daemon's ``message`` of an error body, or the body as text."""
    try:
        return str(json.loads(raw).get("message", "")) or raw.decode(errors="replace").strip()
    except (ValueError, AttributeError):
        return raw.decode(errors="replace").strip()


class Transport:
    """Connections to one engine. ``Transport()`` finds it with ``discovery.discover()``;
    ``host=URL`` and ``location=...`` take it as given; ``preference="podman"`` applies
    ``container.engine``."""

    def __init__(self, host: str | None = None, timeout: float = 120.0, location: EngineLocation | None = None,
                 preference: str = "auto"):
        if location is None:
            if host:
                source = "DOCKER_HOST" if host == os.environ.get("DOCKER_HOST") else "given host"
                location = _location_for(host, source)
            else:
                location = discovery.discover(preference)
        self.location = location
        self.host = location.url
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        if self.host.startswith("unix://"):
            self._unix = self.host[len("unix://"):]
        elif self.host.startswith("tcp://"):
            self._unix = None
            hostport = self.host[len("tcp://"):].rstrip("/")
            self._tls = location.tls
            default_port = 2376 if self._tls else 2375  # Docker's TLS and plain ports
            self._addr = hostport.rsplit(":", 1)[0], int(hostport.rsplit(":", 1)[1]) if ":" in hostport else default_port
        else:
            raise EngineUnavailable(
                f"{location.source}={self.host} is not supported by primus-runner (unix:// or tcp:// only)",
                hint="forward the remote socket (ssh -L /tmp/docker.sock:/var/run/docker.sock HOST) and use unix://",
            )

    def _new_conn(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._unix is not None:
            return _UnixConnection(self._unix, timeout)
        if self._tls:
            return http.client.HTTPSConnection(*self._addr, timeout=timeout, context=_tls_context(self.location))
        return http.client.HTTPConnection(*self._addr, timeout=timeout)

    def _unreachable(self, exc: BaseException) -> EngineUnavailable:
        return discovery.unreachable(self.location, exc)

    def _api_error(self, status: int, raw: bytes) -> Exception:
        message = error_message(raw)
        if status == 500 and "name is already in use" in message:
            status = 409  # Podman's name conflict; Docker (and the callers) say 409
        return ApiError(status, message)

    def reset(self) -> None:
        """Drop the keep-alive connection (after an interrupted request left it mid-response)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _roundtrip(self, method: str, url: str, data: bytes | None, headers: dict, timeout: float | None):
        """(status, lower-cased headers, body) over the keep-alive connection; retried once on a stale one."""
        for attempt in (0, 1):
            reused = self._conn is not None
            if self._conn is None:
                self._conn = self._new_conn(self.timeout)
            conn = self._conn
            conn.timeout = timeout
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
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, raw
        raise AssertionError("unreachable")

    def _hijack(self, url: str, body: bytes, content_type: str) -> tuple[socket.socket, bytes]:
        try:
            if self._unix is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(self._unix)
            else:
                sock = socket.create_connection(self._addr)
                if self._tls:
                    sock = _tls_context(self.location).wrap_socket(sock, server_hostname=self._addr[0])
        except OSError as exc:
            raise self._unreachable(exc) from None
        request = (
            f"POST {url} HTTP/1.1\r\nHost: docker\r\nContent-Type: {content_type}\r\n"
            f"Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
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
            raise self._api_error(status, rest)
        return sock, rest

    def _head(self, url: str) -> int:
        """Status of a HEAD request on a connection of its own."""
        conn = self._new_conn(self.timeout)
        try:
            conn.request("HEAD", url)
            resp = conn.getresponse()
            resp.read()
            return resp.status
        except OSError as exc:
            raise self._unreachable(exc) from None
        finally:
            conn.close()

    def _stream(self, method: str, url: str, body: bytes | None, headers: dict | None) -> Iterator[bytes]:
        """A streamed response body, yielding pieces as they arrive. Each stream has its own
        connection: the response can last as long as a build."""
        conn = self._new_conn(None)
        try:
            try:
                conn.request(method, url, body=body, headers=headers or {})
                resp = conn.getresponse()
            except OSError as exc:
                raise self._unreachable(exc) from None
            if resp.status >= 400:
                raise self._api_error(resp.status, resp.read())
            while True:
                piece = resp.read1(1 << 20)
                if not piece:
                    return
                yield piece
        finally:
            conn.close()

    def _post_aside(self, url: str) -> None:
        """A POST on a connection of its own, beside a pump or a wait on the shared one; a
        refusal or a closed engine is not an error (a resize as the job ends)."""
        conn = self._new_conn(5.0)
        try:
            conn.request("POST", url)
            conn.getresponse().read()
        except OSError:
            pass
        finally:
            conn.close()
