"""A thin Docker Engine API client on the standard library, for the hot path of ``up``.

Why not the docker SDK here: importing it (requests, urllib3, charset_normalizer)
costs more than the whole 100 ms overhead budget of ``up`` over ``docker run``.
The Engine API is plain HTTP/JSON on a unix socket, and the few calls a launch
needs (create, attach, start, wait, inspect, remove) fit in this module. The SDK
stays available for everything else (``discovery.sdk_kwargs`` reaches the same engine).

Where the engine is comes from ``discovery.discover`` (``DOCKER_HOST``, the Docker
context, the Docker socket, Podman's sockets). The API version is negotiated once
per process and engine, as the docker CLI does: ``/_ping``'s ``Api-Version`` header
(one request on the connection the launch then keeps using), the lower of it and
``MAX_API_VERSION``; ``DOCKER_API_VERSION`` overrides. Docker 29 refuses anything
below 1.44, Docker 20.10 and Podman 4 speak at most 1.41.

Where the engine is Podman, a container's lifecycle (create, attach, start, wait, kill,
stop, remove) and the launch's image lookups go to Podman's own API (``/v4.0.0/libpod/…``,
served by Podman 4 and 5): its Docker-compatible layer waits by polling the container's
state without pause until the exit is recorded (a core of the service for as long as a wait
lasts: the runner's, issued when the job's output ends, spins while Podman cleans the container
up, on the cores that cleanup needs; 3-4 times the service's CPU of a whole launch through
its own API), removes by stopping with the StopTimeout first, and cannot carry CDI devices. The body Podman's create gets is a pure translation
of the request's (``libpod.create_body``), shown by the dry run.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
from dataclasses import dataclass
from typing import Any, Iterator
from urllib.parse import quote, urlencode

from runner.clients.engine_api import discovery
from runner.clients.engine_api.discovery import EngineLocation
from runner.errors import EngineUnavailable, UsageError

# The oldest API the runner's requests are written for (Docker 20.10, Podman 4: 1.41)
# and the newest it knows (the docker SDK 7.1's default). Between them the calls the
# runner makes did not change in ways it depends on.
MIN_API_VERSION = "1.41"
MAX_API_VERSION = "1.45"
LIBPOD_PREFIX = "/v4.0.0/libpod"  # Podman's own API; every Podman 4 and 5 serves this version
API_PREFIX = "/v" + MIN_API_VERSION  # before negotiation; kept for callers that build paths themselves
# Kept for callers that print their own "not reachable" message; ``discovery.unreachable`` is the full one.
START_HINT = "start it: sudo systemctl start docker (or dockerd &); for Podman: podman system service --time=0 unix:///run/podman/podman.sock &"

_VERSION = re.compile(r"^\d+\.\d+$")


def _vtuple(text: str) -> tuple[int, int]:
    major, _, minor = str(text).strip().partition(".")
    return int(major), int(minor or 0)


@dataclass(frozen=True)
class Negotiated:
    """The outcome of one negotiation: the version in use and what the daemon said about itself."""

    api_version: str
    daemon_api_version: str | None  # None: DOCKER_API_VERSION was used, the daemon was not asked
    kind: str | None  # "docker" | "podman" from the daemon's own headers; None: not asked
    source: str  # "ping" | "version" | "DOCKER_API_VERSION"


# One negotiation per process and engine (url, DOCKER_API_VERSION): every Engine shares it.
_NEGOTIATED: dict[tuple[str, str], Negotiated] = {}


class ApiError(Exception):
    """The daemon answered with an HTTP error; ``message`` is the daemon's own text."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def docker_host() -> str:
    """The engine URL discovery picks with the default preference (``DOCKER_HOST`` first)."""
    return os.environ.get("DOCKER_HOST") or discovery.discover().url


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


# Docker's rule for a container name (an id is hex): nothing that walks the API path ('/', '..', '?').
_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _ref(name: str) -> str:
    """A container name or id as one API path segment; anything else is a usage error (exit 2)."""
    if not _REF.fullmatch(str(name)) or ".." in str(name):
        raise UsageError("that is not a container name or id (the text is not shown)",
                         "a name is letters, digits, '_', '.' and '-', starting with a letter or digit; "
                         "list the runner's containers with `primus-runner ps`")
    return quote(str(name), safe="")


class Engine:
    """One keep-alive connection for request/response calls; dedicated ones for streams.

    ``Engine()`` finds the engine with ``discovery.discover()``; ``Engine(host=URL)``
    and ``Engine(location=...)`` take it as given; ``Engine(preference="podman")``
    applies ``container.engine``.
    """

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
        self._api: Negotiated | None = None
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

    # -- connections --------------------------------------------------------
    def _new_conn(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._unix is not None:
            return _UnixConnection(self._unix, timeout)
        if self._tls:
            return http.client.HTTPSConnection(*self._addr, timeout=timeout, context=_tls_context(self.location))
        return http.client.HTTPConnection(*self._addr, timeout=timeout)

    def _unreachable(self, exc: BaseException) -> EngineUnavailable:
        return discovery.unreachable(self.location, exc)

    def reset(self) -> None:
        """Drop the keep-alive connection (after an interrupted request left it mid-response)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def path(self, path: str, params: dict | None = None) -> str:
        """``/vX.Y/path?params`` with the negotiated version (negotiating on first use)."""
        url = "/v" + self.api_version + path
        if params:
            url += "?" + urlencode({k: v for k, v in params.items() if v is not None})
        return url

    # -- version negotiation -------------------------------------------------
    @property
    def api_version(self) -> str:
        return self.negotiate().api_version

    @property
    def kind(self) -> str:
        """``docker`` or ``podman``: what the daemon says it is (its ``/_ping`` headers)."""
        api = self.negotiate()
        if api.kind is None:  # DOCKER_API_VERSION skipped the ping: ask now (only callers that care pay)
            status, headers, _ = self._roundtrip("GET", "/_ping", None, {}, 5.0)
            api = Negotiated(api.api_version, api.daemon_api_version, _kind_from_headers(headers) or self.location.kind, api.source)
            self._api = _NEGOTIATED[self._api_key()] = api
        return api.kind or self.location.kind

    @property
    def is_podman(self) -> bool:
        return self.kind == "podman"

    def _api_key(self) -> tuple[str, str]:
        return self.host, os.environ.get("DOCKER_API_VERSION", "")

    def negotiate(self) -> Negotiated:
        """The API version for this engine, asked once per process (``GET /_ping``; ``/version`` as fallback)."""
        if self._api is not None:
            return self._api
        key = self._api_key()
        api = _NEGOTIATED.get(key)
        if api is None:
            api = _NEGOTIATED[key] = self._negotiate(key[1].strip())
        self._api = api
        return api

    def _negotiate(self, forced: str) -> Negotiated:
        if forced and forced.lower() != "auto":
            if not _VERSION.match(forced):
                raise UsageError(f"DOCKER_API_VERSION={forced} is not an API version", hint="e.g. DOCKER_API_VERSION=1.44, or unset it to negotiate")
            return Negotiated(forced, None, None, "DOCKER_API_VERSION")
        status, headers, raw = self._roundtrip("GET", "/_ping", None, {}, 5.0)
        kind = _kind_from_headers(headers)
        daemon = headers.get("api-version") if status < 400 else None
        source = "ping"
        minimum = None
        if not daemon or not _VERSION.match(daemon):
            status, headers, raw = self._roundtrip("GET", "/version", None, {}, 5.0)
            try:
                info = json.loads(raw) if status < 400 else {}
            except ValueError:
                info = {}
            daemon, minimum, source = info.get("ApiVersion"), info.get("MinAPIVersion"), "version"
            kind = kind or _kind_from_version(info)
            if not daemon or not _VERSION.match(str(daemon)):
                raise EngineUnavailable(
                    f"the engine at {self.host} did not say which API version it speaks (/_ping and /version: HTTP {status})",
                    hint="is this a Docker or Podman API socket? set DOCKER_API_VERSION=1.41 to skip the question",
                )
        if _vtuple(daemon) < _vtuple(MIN_API_VERSION):
            name = "Podman" if (kind or self.location.kind) == "podman" else "Docker"
            raise EngineUnavailable(
                f"the {name} engine at {self.host} speaks API {daemon}; primus-runner needs {MIN_API_VERSION} or newer",
                hint="upgrade the engine (Docker 20.10+ or Podman 4+)",
            )
        version = min(_vtuple(daemon), _vtuple(MAX_API_VERSION))
        if minimum and _VERSION.match(str(minimum)) and _vtuple(minimum) > version:
            raise _too_new(self.host, f"{version[0]}.{version[1]}", str(minimum))
        return Negotiated(f"{version[0]}.{version[1]}", str(daemon), kind, source)

    def describe(self) -> dict:
        """What ``check`` reports: ``{engine, host, source, version, api_version, daemon_api_version, min_api_version}``."""
        info = self.request("GET", "/version") or {}
        api = self.negotiate()
        kind = _kind_from_version(info) or api.kind or self.location.kind
        return {
            "engine": kind,
            "host": self.host,
            "source": self.location.source,
            "version": info.get("Version"),
            "api_version": api.api_version,
            "daemon_api_version": info.get("ApiVersion") or api.daemon_api_version,
            "min_api_version": info.get("MinAPIVersion"),
        }

    # -- request/response ---------------------------------------------------
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

    def request(self, method: str, path: str, params: dict | None = None, body: Any = None, timeout: float | None = -1.0) -> Any:
        """One call; returns the decoded JSON (or None). Raises ``ApiError`` / ``EngineUnavailable``."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        url = self.path(path, params)
        status, resp_headers, raw = self._roundtrip(method, url, data, headers, self.timeout if timeout == -1.0 else timeout)
        if status >= 400:
            raise self._api_error(status, raw)
        if not raw:
            return None
        if "json" in resp_headers.get("content-type", ""):
            return json.loads(raw)
        return raw

    def libpod_request(self, method: str, path: str, params: dict | None = None, body: Any = None,
                       timeout: float | None = -1.0) -> Any:
        """A call to Podman's own API (``/v4.0.0/libpod/...``). Podman only."""
        if not self.is_podman:
            raise ApiError(400, f"the engine at {self.host} is not Podman: no libpod API")
        data = None if body is None else json.dumps(body).encode()
        status, headers, raw = self._roundtrip(method, _libpod_url(path, params), data, {"Content-Type": "application/json"} if data else {},
                                               self.timeout if timeout == -1.0 else timeout)
        if status >= 400:
            raise self._api_error(status, raw)
        return json.loads(raw) if raw and "json" in headers.get("content-type", "") else (raw or None)

    def _container_call(self, method: str, path: str, params: dict | None = None, timeout: float | None = -1.0) -> Any:
        """A container call on the engine's own API: libpod on Podman (``params`` as libpod names them), else Docker's."""
        if self.is_podman:
            return self.libpod_request(method, path, params, timeout=timeout)
        return self.request(method, path, params, timeout=timeout)

    def _api_error(self, status: int, raw: bytes) -> Exception:
        message = _message(raw)
        if status == 400 and "too old" in message and "version" in message:
            # A daemon whose minimum API is above what was negotiated or forced (Docker 29: 1.44).
            return _too_new(self.host, self.api_version, _minimum_from(message), message)
        if status == 500 and "name is already in use" in message:
            status = 409  # Podman's name conflict; Docker (and the callers) say 409
        return ApiError(status, message)

    def head(self, path: str, params: dict | None = None, libpod: bool = False) -> int:
        """Status of a HEAD request on the Engine API (``libpod=True``: on Podman's own)."""
        conn = self._new_conn(self.timeout)
        try:
            conn.request("HEAD", _libpod_url(path, params) if libpod else self.path(path, params))
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
                raise self._api_error(resp.status, resp.read())
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
        if self.is_podman:
            url = _libpod_url(f"/containers/{_ref(container_id)}/attach",
                              {"stream": "true", "stdout": "true", "stderr": "true", "stdin": "true" if stdin else "false"})
        else:
            url = self.path(f"/containers/{_ref(container_id)}/attach", {"stream": 1, "stdout": 1, "stderr": 1, "stdin": 1 if stdin else 0})
        return self._hijack(url, b"", "text/plain")

    def exec_start(self, exec_id: str, tty: bool = False) -> tuple[socket.socket, bytes]:
        """Start an exec instance attached (``tty``: with a terminal, as it was created): the raw stream socket, as ``attach``."""
        body = b'{"Detach": false, "Tty": %s}' % (b"true" if tty else b"false")
        return self._hijack(self.path(f"/exec/{_ref(exec_id)}/start"), body, "application/json")

    def resize(self, cid: str, rows: int, cols: int, kind: str = "containers") -> None:
        """The job's terminal (``kind`` "exec": an exec's) to the user's window size. Its own connection: called
        beside a pump or a wait on the shared one; a refusal (the job just ended) is not an error."""
        conn = self._new_conn(5.0)
        try:
            conn.request("POST", self.path(f"/{kind}/{_ref(cid)}/resize", {"h": rows, "w": cols}))
            conn.getresponse().read()
        except OSError:
            pass
        finally:
            conn.close()

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

    # -- the calls a launch needs --------------------------------------------
    def ping(self) -> None:
        """Raise ``EngineUnavailable`` unless the engine answers (and its API version is usable)."""
        fresh = self._api is None and self._api_key() not in _NEGOTIATED
        api = self.negotiate()
        if not fresh or api.source == "DOCKER_API_VERSION":  # the negotiation's own _ping was this ping
            self.request("GET", "/_ping", timeout=5.0)

    def create(self, name: str, config: dict, platform: str | None = None) -> str:
        from runner.clients.engine_api import libpod

        if self.is_podman:
            try:
                body = libpod.podman_create(name, config)
            except ValueError as exc:
                raise ApiError(400, f"with CDI devices Podman's own create is used, which cannot express {exc} here") from None
            if body is not None:
                try:
                    return self.libpod_request("POST", "/containers/create", body=body)["Id"]
                except ApiError as exc:
                    if exc.status == 500 and "image not known" in exc.message:
                        raise ApiError(404, f"no such image: {exc.message}") from None  # Docker's answer, which callers act on
                    raise
        return self.request("POST", "/containers/create", {"name": name, "platform": platform}, config)["Id"]

    def has_path(self, cid: str, path: str) -> bool:
        """Does ``path`` exist in the container's filesystem (``HEAD …/archive``)."""
        return self.head(f"/containers/{_ref(cid)}/archive", {"path": path}, libpod=self.is_podman) != 404

    def start(self, cid: str) -> None:
        self._container_call("POST", f"/containers/{_ref(cid)}/start")

    def wait(self, cid: str) -> int:
        """The job's exit code. Called once its output has ended, so the exit is near: on Podman
        its own wait polls every 50 ms (its compat wait polls without pause for the whole wait)."""
        if self.is_podman:
            return int(self.libpod_request("POST", f"/containers/{_ref(cid)}/wait", {"interval": "50ms"}, timeout=None))
        return int(self.request("POST", f"/containers/{_ref(cid)}/wait", timeout=None)["StatusCode"])

    def inspect(self, cid: str) -> dict:
        return self.request("GET", f"/containers/{_ref(cid)}/json")

    def inspect_image(self, name: str) -> dict | None:
        """``GET /images/NAME/json``, or None when the image is not in the local store."""
        try:
            return self.request("GET", f"/images/{quote(name, safe='')}/json")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def image_config(self, name: str) -> dict | None:
        """What a launch reads of a local image (``Config.Entrypoint``, ``RepoDigests``, ``Id``), or None
        when it is not here: Podman's own inspect on Podman (its ``Id`` in Docker's ``sha256:`` form)."""
        if not self.is_podman:
            return self.inspect_image(name)
        try:
            info = self.libpod_request("GET", f"/images/{quote(name, safe='')}/json")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        if info.get("Id") and ":" not in info["Id"]:
            info["Id"] = "sha256:" + info["Id"]
        return info

    def image_exists(self, name: str) -> bool:
        """Is the image in the local store: Podman's ``exists`` (no inspect built) on Podman."""
        if not self.is_podman:
            return self.inspect_image(name) is not None
        try:
            self.libpod_request("GET", f"/images/{quote(name, safe='')}/exists")
            return True
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise

    def distribution(self, image: str, auth: str | None) -> dict:
        """The registry's descriptor of ``image`` as the daemon sees it, without pulling
        (``GET /distribution/{name}/json``, ``auth`` as ``X-Registry-Auth``). Docker only."""
        headers = {"X-Registry-Auth": auth} if auth else {}
        status, _, raw = self._roundtrip("GET", self.path(f"/distribution/{image}/json"), None, headers, self.timeout)
        if status >= 400:
            raise self._api_error(status, raw)
        return json.loads(raw) if raw else {}

    def stop(self, cid: str, grace: float | None = None) -> None:
        key = "timeout" if self.is_podman else "t"
        params = {key: int(grace)} if grace is not None else None
        try:
            self._container_call("POST", f"/containers/{_ref(cid)}/stop", params, timeout=None)
        except ApiError as exc:
            if exc.status not in (304, 404):
                raise

    def kill(self, cid: str) -> None:
        try:
            self._container_call("POST", f"/containers/{_ref(cid)}/kill", {"signal": "SIGKILL"} if self.is_podman else None)
        except ApiError as exc:
            # Podman says 500 "can only kill running containers ... container state improper" where Docker says 409.
            if exc.status not in (404, 409) and not (exc.status == 500 and "state improper" in exc.message):
                raise

    def remove(self, cid: str) -> None:
        """Force-remove at once (a running container is killed, not stopped). Podman's forced remove
        stops with the container's StopTimeout unless told ``timeout=0``."""
        params = {"force": "true", "v": "true", "timeout": 0} if self.is_podman else {"force": 1, "v": 1}
        try:
            answer = self._container_call("DELETE", f"/containers/{_ref(cid)}", params)
        except ApiError as exc:
            if exc.status != 404 and "already in progress" not in exc.message:
                raise
            return
        for report in answer if isinstance(answer, list) else ():  # Podman: one report per container, its error inside
            err = str(report.get("Err") or "")
            if err and "already in progress" not in err and "no such container" not in err:
                raise ApiError(500, err)

    # -- where engines differ -------------------------------------------------
    @property
    def capabilities(self) -> "Capabilities":
        return capabilities(self.kind)

    def exit_cause(self, cid: str, code: int, info: dict | None = None) -> str | None:
        """Why a job ended with ``code``, for the message: ``"oom"`` (the engine says so),
        ``"oom-likely"`` (an engine that cannot tell here, see ``Capabilities.reports_oom``:
        SIGKILL under a memory limit), ``"killed"`` (SIGKILL from elsewhere), None (not 137).

        ``info`` is the container's inspect if the caller has it (one request saved).
        """
        if code != 137:
            return None
        if info is None:
            try:
                info = self.inspect(cid)
            except ApiError:
                return "killed"
        if (info.get("State") or {}).get("OOMKilled"):
            return "oom"
        if not self.capabilities.reports_oom and ((info.get("HostConfig") or {}).get("Memory") or 0) > 0:
            return "oom-likely"
        return "killed"

    def containers(self, labels: list[str], all: bool = True) -> list[dict]:
        filters = json.dumps({"label": labels})
        return self.request("GET", "/containers/json", {"all": 1 if all else 0, "filters": filters})


def _libpod_url(path: str, params: dict | None = None) -> str:
    url = LIBPOD_PREFIX + path
    if params:
        url += "?" + urlencode({k: v for k, v in params.items() if v is not None})
    return url


def _message(raw: bytes) -> str:
    try:
        return str(json.loads(raw).get("message", "")) or raw.decode(errors="replace").strip()
    except (ValueError, AttributeError):
        return raw.decode(errors="replace").strip()


@dataclass(frozen=True)
class Capabilities:
    """What differs between the engines behind the same API, as the runner meets it.

    - ``reports_oom``: ``State.OOMKilled`` is set when the kernel OOM-kills the job. Podman
      learns it from conmon, which misses it on hosts with a hybrid cgroup layout (these
      test machines): a 137 under a memory limit is then reported as "most likely".
    - ``remove_kills``: a forced remove kills at once (Docker); Podman's stops with the
      StopTimeout first unless given ``timeout=0``, which ``Engine.remove`` does.
    - ``device_requests``: ``HostConfig.DeviceRequests`` (``--gpus``) is honoured. Podman 4
      accepts and silently ignores it: CUDA goes through CDI there, see ``gpu_host_config``.
    - ``cdi_in_compat_devices``: a CDI name (``nvidia.com/gpu=all``) works as a compat
      ``HostConfig.Devices`` entry. Podman 4 treats it as a path (stat fails); only its
      libpod create endpoint (``devices: [{"path": NAME}]``) and CLI resolve CDI names.
    - ``image_name_prefix``: how the engine names a local image loaded without a registry
      (Podman: ``localhost/``), e.g. in ``Config.Image`` of an inspect.
    """

    kind: str
    reports_oom: bool
    remove_kills: bool
    device_requests: bool
    cdi_in_compat_devices: bool
    image_name_prefix: str


def capabilities(kind: str) -> Capabilities:
    if kind == "podman":
        return Capabilities("podman", reports_oom=False, remove_kills=False, device_requests=False,
                            cdi_in_compat_devices=False, image_name_prefix="localhost/")
    return Capabilities("docker", reports_oom=True, remove_kills=True, device_requests=True,
                        cdi_in_compat_devices=False, image_name_prefix="")


CDI_NVIDIA_ALL = "nvidia.com/gpu=all"


def gpu_host_config(device_request: str | None, kind: str, api_version: str = MIN_API_VERSION, cdi: bool = False,
                    device_ids: list[str] | None = None) -> dict:
    """The HostConfig fields a GPU flavor's device request adds, for this engine.

    ROCm needs none (its ``/dev/kfd`` and render/card nodes are plain ``Devices`` on both
    engines, its groups ``GroupAdd``). CUDA (``device_request == "nvidia"``), for all GPUs
    or, with ``device_ids`` (the chosen GPUs' indices), exactly those:

    - Docker: ``DeviceRequests: [{Driver: "", Count: -1, Capabilities: [["gpu"]]}]``
      (``--gpus all``) or ``DeviceIDs: ["1", "3"]`` (``--gpus '"device=1,3"'``), which needs
      nvidia-container-toolkit registered with dockerd; with ``cdi=True`` on API 1.44+
      (Docker 25+, CDI enabled in daemon.json): ``{Driver: "cdi", DeviceIDs: ["nvidia.com/gpu=…"]}``.
    - Podman: the CDI devices ``nvidia.com/gpu=N`` (``podman run --device nvidia.com/gpu=1``),
      as ``{Driver: "cdi", DeviceIDs: [...]}``. Podman 4's compat create would ignore that, so
      ``Engine.create`` sends such a body to Podman's own create (``libpod``), where CDI names
      resolve; they need a CDI spec (``nvidia-ctk cdi generate``), checked in preflight
      (``runner.gpus.cdi``).
    """
    if device_request != "nvidia":
        return {}
    cdi_names = [f"nvidia.com/gpu={i}" for i in device_ids] if device_ids else [CDI_NVIDIA_ALL]
    if kind == "podman":
        return {"DeviceRequests": [{"Driver": "cdi", "DeviceIDs": cdi_names}]}
    if cdi and _vtuple(api_version) >= (1, 44):
        return {"DeviceRequests": [{"Driver": "cdi", "DeviceIDs": cdi_names}]}
    if device_ids:
        return {"DeviceRequests": [{"Driver": "", "DeviceIDs": list(device_ids), "Capabilities": [["gpu"]]}]}
    return {"DeviceRequests": [{"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]}


def _location_for(url: str, source: str) -> EngineLocation:
    tls = verify = False
    cert_path = None
    if url.startswith("tcp://"):
        tls, verify, cert_path = discovery._env_tls(os.environ)
    return EngineLocation(discovery._kind_of(url), url, source, tls, verify, cert_path)


def _kind_from_headers(headers: dict) -> str | None:
    """Podman's compat API answers with ``Libpod-Api-Version`` and ``Server: Libpod/...``."""
    if "libpod-api-version" in headers or headers.get("server", "").lower().startswith("libpod"):
        return "podman"
    if headers.get("server", "").lower().startswith("docker"):
        return "docker"
    return None


def _kind_from_version(info: dict) -> str | None:
    names = [str(c.get("Name", "")) for c in info.get("Components") or [] if isinstance(c, dict)]
    names.append(str((info.get("Platform") or {}).get("Name", "")))
    text = " ".join(names).lower()
    if "podman" in text:
        return "podman"
    if "docker" in text or "engine" in text:
        return "docker"
    return None


def _minimum_from(message: str) -> str | None:
    match = re.search(r"minimum supported api version is (\d+\.\d+)", message, re.IGNORECASE)
    return match.group(1) if match else None


def _too_new(host: str, used: str, minimum: str | None, message: str | None = None) -> EngineUnavailable:
    forced = os.environ.get("DOCKER_API_VERSION")
    if forced and forced.strip().lower() != "auto":
        hint = f"unset DOCKER_API_VERSION (it is {forced}) so primus-runner negotiates the version"
    elif minimum:
        hint = f"upgrade primus-runner (it speaks API {MIN_API_VERSION} to {MAX_API_VERSION}), or try DOCKER_API_VERSION={minimum}"
    else:
        hint = f"upgrade primus-runner (it speaks API {MIN_API_VERSION} to {MAX_API_VERSION})"
    need = f" (its minimum is {minimum})" if minimum else ""
    said = f": {message}" if message else ""
    return EngineUnavailable(f"the engine at {host} refuses API version {used}{need}{said}", hint=hint)


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
