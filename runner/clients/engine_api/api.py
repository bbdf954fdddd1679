"""A thin Docker Engine API client on the standard library, for the hot path of ``up``.

Why not the docker SDK: importing it (requests, urllib3, charset_normalizer)
costs more than the whole 100 ms overhead budget of ``up`` over ``docker run``.
The Engine API is plain HTTP/JSON on a unix socket, and the few calls a launch
needs (create, attach, start, wait, inspect, remove) fit in this class.

Where the engine is comes from ``discovery.discover``; the connection is ``transport``'s, the
API version ``negotiation``'s, and what a request says (paths, GPU fields) ``types``'.

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

import json
import socket
from typing import Any, Iterator
from urllib.parse import quote

from runner.clients.engine_api.negotiation import Negotiating
from runner.clients.engine_api.transport import ApiError
from runner.clients.engine_api.types import Capabilities, capabilities, container_ref, libpod_url


class Engine(Negotiating):
    """The calls the runner makes, on one engine: one keep-alive connection for request/response
    calls, dedicated ones for streams (``transport.Transport`` says how it is found)."""

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
        status, headers, raw = self._roundtrip(method, libpod_url(path, params), data, {"Content-Type": "application/json"} if data else {},
                                               self.timeout if timeout == -1.0 else timeout)
        if status >= 400:
            raise self._api_error(status, raw)
        return json.loads(raw) if raw and "json" in headers.get("content-type", "") else (raw or None)

    def _container_call(self, method: str, path: str, params: dict | None = None, timeout: float | None = -1.0) -> Any:
        """A container call on the engine's own API: libpod on Podman (``params`` as libpod names them), else Docker's."""
        if self.is_podman:
            return self.libpod_request(method, path, params, timeout=timeout)
        return self.request(method, path, params, timeout=timeout)

    def head(self, path: str, params: dict | None = None, libpod: bool = False) -> int:
        """Status of a HEAD request on the Engine API (``libpod=True``: on Podman's own)."""
        return self._head(libpod_url(path, params) if libpod else self.path(path, params))

    def stream(
        self, path: str, params: dict | None = None, method: str = "GET", body: bytes | None = None, headers: dict | None = None
    ) -> Iterator[bytes]:
        """A streamed response body (logs, build progress), yielding pieces as they arrive (asked on the first)."""
        yield from self._stream(method, self.path(path, params), body, headers)

    def attach(self, container_id: str, stdin: bool) -> tuple[socket.socket, bytes]:
        """Hijack an attach connection; returns the raw socket and any stream bytes already read.

        Done by hand (not through http.client) because the connection stops being
        HTTP after the 101 response, and the runner needs the socket itself: to
        half-close its write side (the job's stdin EOF) and to ``recv_into`` big buffers.
        """
        if self.is_podman:
            url = libpod_url(f"/containers/{container_ref(container_id)}/attach",
                             {"stream": "true", "stdout": "true", "stderr": "true", "stdin": "true" if stdin else "false"})
        else:
            url = self.path(f"/containers/{container_ref(container_id)}/attach", {"stream": 1, "stdout": 1, "stderr": 1, "stdin": 1 if stdin else 0})
        return self._hijack(url, b"", "text/plain")

    def exec_start(self, exec_id: str, tty: bool = False) -> tuple[socket.socket, bytes]:
        """Start an exec instance attached (``tty``: with a terminal, as it was created): the raw stream socket, as ``attach``."""
        body = b'{"Detach": false, "Tty": %s}' % (b"true" if tty else b"false")
        return self._hijack(self.path(f"/exec/{container_ref(exec_id)}/start"), body, "application/json")

    def resize(self, cid: str, rows: int, cols: int, kind: str = "containers") -> None:
        """The job's terminal (``kind`` "exec": an exec's) to the user's window size."""
        self._post_aside(self.path(f"/{kind}/{container_ref(cid)}/resize", {"h": rows, "w": cols}))

    # -- the calls a launch needs --------------------------------------------
    def ping(self) -> None:
        """Raise ``EngineUnavailable`` unless the engine answers (and its API version is usable)."""
        fresh = self._fresh()
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
        return self.head(f"/containers/{container_ref(cid)}/archive", {"path": path}, libpod=self.is_podman) != 404

    def start(self, cid: str) -> None:
        self._container_call("POST", f"/containers/{container_ref(cid)}/start")

    def wait(self, cid: str) -> int:
        """The job's exit code. Called once its output has ended, so the exit is near: on Podman
        its own wait polls every 50 ms (its compat wait polls without pause for the whole wait)."""
        if self.is_podman:
            return int(self.libpod_request("POST", f"/containers/{container_ref(cid)}/wait", {"interval": "50ms"}, timeout=None))
        return int(self.request("POST", f"/containers/{container_ref(cid)}/wait", timeout=None)["StatusCode"])

    def inspect(self, cid: str) -> dict:
        return self.request("GET", f"/containers/{container_ref(cid)}/json")

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
            self._container_call("POST", f"/containers/{container_ref(cid)}/stop", params, timeout=None)
        except ApiError as exc:
            if exc.status not in (304, 404):
                raise

    def kill(self, cid: str) -> None:
        try:
            self._container_call("POST", f"/containers/{container_ref(cid)}/kill", {"signal": "SIGKILL"} if self.is_podman else None)
        except ApiError as exc:
            # Podman says 500 "can only kill running containers ... container state improper" where Docker says 409.
            if exc.status not in (404, 409) and not (exc.status == 500 and "state improper" in exc.message):
                raise

    def remove(self, cid: str) -> None:
        """Force-remove at once (a running container is killed, not stopped). Podman's forced remove
        stops with the container's StopTimeout unless told ``timeout=0``."""
        params = {"force": "true", "v": "true", "timeout": 0} if self.is_podman else {"force": 1, "v": 1}
        try:
            answer = self._container_call("DELETE", f"/containers/{container_ref(cid)}", params)
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
