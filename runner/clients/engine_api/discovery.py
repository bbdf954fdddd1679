"""Where the container engine is: Docker or Podman, which socket, found how.

The order is the one users expect from the docker CLI, then Podman's sockets:

1. ``DOCKER_HOST`` (``unix://`` or ``tcp://``; TLS from ``DOCKER_TLS_VERIFY`` /
   ``DOCKER_CERT_PATH`` / ``DOCKER_TLS``), or Podman's own ``CONTAINER_HOST``
   when the preference is ``podman``;
2. the current Docker context (``DOCKER_CONTEXT``, else ``currentContext`` of
   ``$DOCKER_CONFIG/config.json``): its ``meta.json`` endpoint and TLS files;
3. the default Docker socket ``/var/run/docker.sock``;
4. Podman's rootful ``/run/podman/podman.sock``, then rootless
   ``$XDG_RUNTIME_DIR/podman/podman.sock``.

Sockets in 3 and 4 count only when something listens on them (a ``connect``,
no request): a stale Docker socket must not hide a live Podman. 1 and 2 are
the user's explicit choice and are taken as given.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from typing import NamedTuple

from runner.errors import ConfigError, EngineUnavailable, Problem

PREFERENCES = ("auto", "docker", "podman")
DOCKER_SOCKET = "/var/run/docker.sock"
PODMAN_ROOTFUL_SOCKET = "/run/podman/podman.sock"


class EngineLocation(NamedTuple):
    """Where the engine API is and how it was found.

    ``kind`` is what the location suggests (``docker`` or ``podman``); the daemon's
    own answer (``Engine.kind``) is the truth once it has been asked.
    ``tried`` lists every place looked at, for the "not reachable" message.
    """

    kind: str
    url: str
    source: str
    tls: bool = False
    tls_verify: bool = False
    cert_path: str | None = None
    tried: tuple[str, ...] = ()

    @property
    def socket_path(self) -> str | None:
        return self.url[len("unix://"):] if self.url.startswith("unix://") else None


def _kind_of(url: str) -> str:
    """What a URL suggests: Podman's sockets are ``.../podman/podman.sock`` or ``podman*.sock``."""
    parts = url.lower().rstrip("/").split("/")
    return "podman" if "podman" in parts[-1] or (len(parts) > 1 and parts[-2] == "podman") else "docker"


def _answers(path: str) -> str:
    """``ok`` if something accepts a connection on the unix socket ``path``; else why not."""
    if not os.path.exists(path):
        return "absent"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(path)
        return "ok"
    except PermissionError:
        return "permission denied"
    except OSError as exc:
        return exc.strerror or exc.__class__.__name__
    finally:
        sock.close()


def _env_tls(env) -> tuple[bool, bool, str | None]:
    verify = bool(env.get("DOCKER_TLS_VERIFY"))
    cert_path = env.get("DOCKER_CERT_PATH") or None
    tls = verify or bool(cert_path) or bool(env.get("DOCKER_TLS"))
    if tls and cert_path is None:
        cert_path = _docker_config_dir(env)
    return tls, verify, cert_path


def _docker_config_dir(env) -> str:
    return env.get("DOCKER_CONFIG") or os.path.join(os.path.expanduser("~"), ".docker")


def _from_env(name: str, env, kind: str | None = None) -> EngineLocation:
    url = env[name]
    tls, verify, cert_path = _env_tls(env) if url.startswith("tcp://") else (False, False, None)
    return EngineLocation(kind or _kind_of(url), url, name, tls, verify, cert_path)


def _current_context(env) -> tuple[str | None, str]:
    """(context name or None for the default, where the name came from)."""
    name = env.get("DOCKER_CONTEXT")
    if name:
        return (None if name == "default" else name), "DOCKER_CONTEXT"
    config = os.path.join(_docker_config_dir(env), "config.json")
    try:
        with open(config, encoding="utf-8") as f:
            name = json.load(f).get("currentContext")
    except (OSError, ValueError, AttributeError):
        return None, config
    return (None if not name or name == "default" else str(name)), config


def _from_context(name: str, origin: str, env) -> EngineLocation:
    """The endpoint of Docker context ``name`` (``docker context use NAME``)."""
    base = _docker_config_dir(env)
    digest = hashlib.sha256(name.encode()).hexdigest()
    meta_path = os.path.join(base, "contexts", "meta", digest, "meta.json")
    try:
        with open(meta_path, encoding="utf-8") as f:
            endpoint = (json.load(f).get("Endpoints") or {}).get("docker") or {}
    except (OSError, ValueError, AttributeError) as exc:
        raise EngineUnavailable(
            f"Docker context {name!r} (from {origin}) cannot be read: {meta_path} ({exc.__class__.__name__})",
            hint="pick an existing one: docker context ls; docker context use default",
        ) from None
    url = endpoint.get("Host") or ""
    if not url:
        raise EngineUnavailable(
            f"Docker context {name!r} (from {origin}) has no docker endpoint in {meta_path}",
            hint="docker context inspect " + name,
        )
    tls_dir = os.path.join(base, "contexts", "tls", digest, "docker")
    tls = url.startswith("tcp://") and os.path.isdir(tls_dir)
    verify = tls and not endpoint.get("SkipTLSVerify", False)
    return EngineLocation(_kind_of(url), url, f"docker context {name}", tls, verify, tls_dir if tls else None)


def _rootless_socket(env) -> str:
    runtime = env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    return os.path.join(runtime, "podman", "podman.sock")


def _sockets(preference: str, env) -> list[tuple[str, str, str]]:
    """(kind, path, source) of the well-known sockets, in the order they are tried."""
    found: list[tuple[str, str, str]] = []
    if preference in ("auto", "docker"):
        found.append(("docker", DOCKER_SOCKET, "default Docker socket"))
    if preference in ("auto", "podman"):
        found.append(("podman", PODMAN_ROOTFUL_SOCKET, "rootful Podman socket"))
        found.append(("podman", _rootless_socket(env), "rootless Podman socket"))
    return found


def discover(preference: str = "auto", env=None) -> EngineLocation:
    """The engine to talk to for ``container.engine: auto | docker | podman``.

    Never fails for an engine that is down: the caller's first request says so,
    with ``tried`` in the message. Fails (exit 2) for an unknown preference and
    (exit 1) for a current Docker context that cannot be read.
    """
    env = os.environ if env is None else env
    preference = (preference or "auto").strip().lower()
    if preference not in PREFERENCES:
        raise ConfigError(Problem(f"container.engine is {preference!r}", hint="use one of: auto, docker, podman"))
    if preference == "podman":
        if env.get("CONTAINER_HOST"):
            return _from_env("CONTAINER_HOST", env, "podman")
        if env.get("DOCKER_HOST") and _kind_of(env["DOCKER_HOST"]) == "podman":
            return _from_env("DOCKER_HOST", env, "podman")
    else:
        if env.get("DOCKER_HOST"):
            return _from_env("DOCKER_HOST", env)
        name, origin = _current_context(env)
        if name is not None:
            return _from_context(name, origin, env)
    tried: list[str] = []
    first_present: tuple[str, str, str] | None = None
    for kind, path, source in _sockets(preference, env):
        state = _answers(path)
        tried.append(f"{path} ({state})")
        if state == "ok":
            return EngineLocation(kind, f"unix://{path}", source, tried=tuple(tried))
        if state != "absent" and first_present is None:
            first_present = (kind, path, source)
    # Nothing answers: name the socket that exists (its error is the useful one), else the engine's default.
    kind, path, source = first_present or _sockets(preference, env)[0]
    return EngineLocation(kind, f"unix://{path}", source, tried=tuple(tried))


def answering_kind(location: EngineLocation) -> str | None:
    """The engine behind a unix socket that accepts a connection, judged by where the socket
    really is (Podman's docker.sock is a link to its own socket); None for a TCP host or a
    socket nothing listens on (the caller asks the engine itself, or says it is down)."""
    path = location.socket_path
    if path is None or _answers(path) != "ok":
        return None
    if location.kind == "podman" or _kind_of("unix://" + os.path.realpath(path)) == "podman":
        return "podman"
    return "docker"


def start_hint(location: EngineLocation) -> str:
    """The one fix for "engine not reachable", for this engine and place."""
    path = location.socket_path
    if location.source in ("DOCKER_HOST", "CONTAINER_HOST") or location.source.startswith("docker context"):
        where = f"{location.source} points at {location.url}"
        if location.kind == "podman":
            return f"{where}: start Podman's API there (podman system service --time=0 {location.url} &), or change it"
        return f"{where}: start the Docker daemon there (sudo systemctl start docker, or dockerd &), or unset/change {location.source.split(' ')[0] if location.source.startswith('DOCKER') else 'the context'}"
    if location.kind == "podman":
        if path and path != PODMAN_ROOTFUL_SOCKET:
            return f"start it: systemctl --user start podman.socket (or podman system service --time=0 unix://{path} &)"
        return f"start it: sudo systemctl start podman.socket (or podman system service --time=0 unix://{PODMAN_ROOTFUL_SOCKET} &)"
    return "start it: sudo systemctl start docker (or dockerd &); for Podman: podman system service --time=0 unix:///run/podman/podman.sock &"


def unreachable(location: EngineLocation, reason: str | BaseException | None = None) -> EngineUnavailable:
    """The one "engine not reachable" error (exit 1): which engine, where, where else was looked, the fix."""
    name = "Podman" if location.kind == "podman" else "Docker daemon"
    if isinstance(reason, BaseException):
        reason = f"{reason.__class__.__name__}: {reason}" if str(reason) else reason.__class__.__name__
    text = f"{name} is not reachable at {location.url} ({location.source}"
    text += f"; {reason})" if reason else ")"
    others = [t for t in location.tried if not (location.socket_path and t.startswith(location.socket_path + " "))]
    if others:
        text += f"; also looked at: {', '.join(others)}"
    return EngineUnavailable(text, hint=start_hint(location))

