"""Which Engine API version to speak, and which engine answers, asked once per process and engine;
what the engine says about itself (``describe``).

As the docker CLI does: ``/_ping``'s ``Api-Version`` header (one request on the connection
the launch then keeps using), the lower of it and ``MAX_API_VERSION``; ``/version`` as the
fallback; ``DOCKER_API_VERSION`` overrides. Docker 29 refuses anything below 1.44, Docker
20.10 and Podman 4 speak at most 1.41.
"""

from __future__ import annotations

import json
import os
import re
from typing import NamedTuple

from runner.clients.engine_api.transport import Transport, error_message
from runner.clients.engine_api.types import API_VERSION, MAX_API_VERSION, MIN_API_VERSION, api_tuple, query
from runner.errors import EngineUnavailable, UsageError


class Negotiated(NamedTuple):
    """The outcome of one negotiation: the version in use and what the daemon said about itself."""

    api_version: str
    daemon_api_version: str | None  # None: DOCKER_API_VERSION was used, the daemon was not asked
    kind: str | None  # "docker" | "podman" from the daemon's own headers; None: not asked
    source: str  # "ping" | "version" | "DOCKER_API_VERSION"


# One negotiation per process and engine (url, DOCKER_API_VERSION): every Engine shares it.
_NEGOTIATED: dict[tuple[str, str], Negotiated] = {}


class Negotiating(Transport):
    """A transport whose paths carry the negotiated version, and which knows the engine's kind."""

    _api: Negotiated | None = None

    def path(self, path: str, params: dict | None = None) -> str:
        """``/vX.Y/path?params`` with the negotiated version (negotiating on first use)."""
        return query("/v" + self.api_version + path, params)

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

    def _fresh(self) -> bool:
        """Not negotiated yet, by this engine or another of the process."""
        return self._api is None and self._api_key() not in _NEGOTIATED

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

    def describe(self) -> dict:
        """What the engine says about itself, for ``check``: ``{engine, host, source, version, api_version,
        daemon_api_version, min_api_version}`` (``GET /version`` at the negotiated version)."""
        api = self.negotiate()
        status, headers, raw = self._roundtrip("GET", self.path("/version"), None, {}, self.timeout)
        if status >= 400:
            raise self._api_error(status, raw)
        try:
            info = json.loads(raw) if raw else {}
        except ValueError:
            info = {}
        info = info if isinstance(info, dict) else {}
        return {
            "engine": _kind_from_version(info) or api.kind or self.location.kind,
            "host": self.host,
            "source": self.location.source,
            "version": info.get("Version"),
            "api_version": api.api_version,
            "daemon_api_version": info.get("ApiVersion") or api.daemon_api_version,
            "min_api_version": info.get("MinAPIVersion"),
        }

    def _negotiate(self, forced: str) -> Negotiated:
        if forced and forced.lower() != "auto":
            if not API_VERSION.match(forced):
                raise UsageError(f"DOCKER_API_VERSION={forced} is not an API version", hint="e.g. DOCKER_API_VERSION=1.44, or unset it to negotiate")
            return Negotiated(forced, None, None, "DOCKER_API_VERSION")
        status, headers, raw = self._roundtrip("GET", "/_ping", None, {}, 5.0)
        kind = _kind_from_headers(headers)
        daemon = headers.get("api-version") if status < 400 else None
        source = "ping"
        minimum = None
        if not daemon or not API_VERSION.match(daemon):
            status, headers, raw = self._roundtrip("GET", "/version", None, {}, 5.0)
            try:
                info = json.loads(raw) if status < 400 else {}
            except ValueError:
                info = {}
            daemon, minimum, source = info.get("ApiVersion"), info.get("MinAPIVersion"), "version"
            kind = kind or _kind_from_version(info)
            if not daemon or not API_VERSION.match(str(daemon)):
                raise EngineUnavailable(
                    f"the engine at {self.host} did not say which API version it speaks (/_ping and /version: HTTP {status})",
                    hint="is this a Docker or Podman API socket? set DOCKER_API_VERSION=1.41 to skip the question",
                )
        if api_tuple(daemon) < api_tuple(MIN_API_VERSION):
            name = "Podman" if (kind or self.location.kind) == "podman" else "Docker"
            raise EngineUnavailable(
                f"the {name} engine at {self.host} speaks API {daemon}; primus-runner needs {MIN_API_VERSION} or newer",
                hint="upgrade the engine (Docker 20.10+ or Podman 4+)",
            )
        version = min(api_tuple(daemon), api_tuple(MAX_API_VERSION))
        if minimum and API_VERSION.match(str(minimum)) and api_tuple(minimum) > version:
            raise _too_new(self.host, f"{version[0]}.{version[1]}", str(minimum))
        return Negotiated(f"{version[0]}.{version[1]}", str(daemon), kind, source)

    def _api_error(self, status: int, raw: bytes) -> Exception:
        message = error_message(raw)
        if status == 400 and "too old" in message and "version" in message:
            # A daemon whose minimum API is above what was negotiated or forced (Docker 29: 1.44).
            return _too_new(self.host, self.api_version, _minimum_from(message), message)
        return super()._api_error(status, raw)


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
