"""Registry credentials for pulls, treated as secrets end to end.

Where a credential comes from, first match wins:

1. the environment names (the Primus launcher's ``DOCKER_LOGIN_USER``,
   ``DOCKER_LOGIN_KEY`` (a secret), ``DOCKER_LOGIN_REGISTRY``; Docker Hub when
   the registry is unset), when they name the image's registry — set for this
   run, so they win over what the user's Docker config holds;
2. the user's Docker config (``$DOCKER_CONFIG/config.json`` or
   ``~/.docker/config.json``): ``credHelpers`` / ``credsStore`` through the
   ``docker-credential-*`` programs (``credential_helpers``), then ``auths``
   (``docker_config``), as ``docker pull`` resolves them;
3. Podman's auth file (``$REGISTRY_AUTH_FILE``, ``$XDG_RUNTIME_DIR/containers/auth.json``,
   ``~/.config/containers/auth.json``), the same format, where ``podman login`` writes.

The password only leaves the process in the ``X-Registry-Auth`` header
(:func:`auth_header`, the one ``.reveal()`` for it) and in the ``/v2/`` login
check (:func:`check_login`); a credential helper receives the registry name on
its stdin. Messages name the registry and the source, never a value.

Where those files are (``DOCKER_CONFIG``, ``REGISTRY_AUTH_FILE``, ``XDG_RUNTIME_DIR``,
``XDG_CONFIG_HOME``, ``HOME``) comes from the user's own process environment only, never
from an env file: a repository's ``./.env`` must not choose the config that names the
credential helper, and a helper runs only by a plain name found in an absolute ``PATH``
directory (``credential_helpers``).
"""

from __future__ import annotations

import base64
import json
import os
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Callable

from runner.clients import docker_config
from runner.clients.origins import is_loopback, same_origin, show_origin, transport_refusal
from runner.errors import ConfigError, EngineUnavailable, Problem, RuntimeFailure
from runner.secrets import Secret

Lookup = Callable[[str], "str | None"]

# Docker Hub: its index name, where its API lives, and the key
# docker login / credential helpers store Hub credentials under.
HUB = docker_config.INDEX_NAME
HUB_API = "registry-1.docker.io"
HUB_AUTH_KEY = docker_config.INDEX_URL

ENV_NAMES = ("DOCKER_LOGIN_USER", "DOCKER_LOGIN_KEY", "DOCKER_LOGIN_REGISTRY")


@dataclass(frozen=True)
class RegistryCredential:
    """One registry login. ``password`` is an OAuth refresh token when ``identity_token``."""

    registry: str  # host[:port] as images name it ("docker.io" for Docker Hub)
    username: str
    password: Secret
    source: str  # "docker config PATH", "credential helper docker-credential-X", "env DOCKER_LOGIN_*"
    identity_token: bool = False

    def __repr__(self) -> str:
        return f"RegistryCredential(registry={self.registry!r}, username={self.username!r}, source={self.source!r})"

    def describe(self) -> str:
        """For messages and ``plan``: who, where, from where — no value."""
        who = "an identity token" if self.identity_token else f"user {self.username}"
        return f"{who} from {self.source}"


# ------------------------------------------------------------------ names

def _normalise_host(name: str) -> str:
    """A registry as written in a config or env (maybe a URL) → host[:port], Hub as ``docker.io``."""
    name = (name or "").strip()
    if "://" in name:
        name = name.split("://", 1)[1]
    name = name.split("/", 1)[0].lower()
    if name in ("index.docker.io", "registry-1.docker.io", "registry.hub.docker.com", "docker.io", ""):
        return HUB
    return name


def registry_of(image: str) -> str:
    """The registry an image reference names: ``host[:port]``, or ``docker.io`` (Docker Hub) as docker pull resolves it."""
    first, sep, _ = image.partition("/")
    if not sep or ("." not in first and ":" not in first and first != "localhost"):
        return HUB
    return _normalise_host(first)


def api_host(registry: str) -> str:
    """Where the registry's HTTP API answers (Docker Hub's is ``registry-1.docker.io``)."""
    return HUB_API if registry == HUB else registry


# ------------------------------------------------------------------ lookup

def credentials_for(image: str, lookup: Lookup, *, env_names: tuple[str, str, str] = ENV_NAMES,
                    docker_config: str | None = None) -> RegistryCredential | None:
    """The credential to pull ``image`` with, or None (anonymous pull).

    ``lookup(NAME)`` gives a variable's value from the environment or env file
    (None when unset); ``env_names`` are the user, key and registry names (the
    launcher's by default, or the ones the config names). Raises ConfigError
    (exit 2) for a half-given env login or a failing credential helper, and
    EngineUnavailable (exit 1) when the configured helper program is missing.
    """
    registry = registry_of(image)
    cred = _from_env(registry, lookup, env_names)
    if cred is not None:
        return cred
    cred = _from_docker_config(registry, docker_config_path(docker_config), "docker config")
    if cred is None and docker_config is None:
        for path in podman_auth_paths():
            cred = _from_docker_config(registry, path, "podman auth file")
            if cred is not None:
                break
    return cred


def _from_env(registry: str, lookup: Lookup, env_names: tuple[str, str, str]) -> RegistryCredential | None:
    user_name, key_name, registry_name = env_names
    user, key, where = lookup(user_name) or "", lookup(key_name) or "", lookup(registry_name) or ""
    if not user and not key:
        return None
    if _normalise_host(where) != registry:
        return None  # a login for another registry (Docker Hub when unset)
    source = f"env {user_name}/{key_name}" if env_names != ENV_NAMES else "env DOCKER_LOGIN_*"
    if not user or not key:
        missing, given = (user_name, key_name) if not user else (key_name, user_name)
        raise ConfigError(Problem(
            f"{given} is set for registry {registry} but {missing} is not",
            hint=f"set {missing} too (environment or env file), or unset {given} to use your Docker login",
        ))
    return RegistryCredential(registry, user, Secret(key), source)


def _home() -> str:
    return os.environ.get("HOME") or os.path.expanduser("~")


def docker_config_path(explicit: str | None = None) -> str:
    """The Docker CLI's config file: ``$DOCKER_CONFIG/config.json`` or ``~/.docker/config.json``
    (the process environment's: never an env file's)."""
    if explicit:
        return explicit
    directory = os.environ.get("DOCKER_CONFIG") or os.path.join(_home(), ".docker")
    return os.path.join(directory, "config.json")


def podman_auth_paths() -> list[str]:
    """Where ``podman login`` keeps logins (same format as the Docker config), for Podman users
    (the process environment's variables: never an env file's)."""
    paths = [os.environ.get("REGISTRY_AUTH_FILE") or ""]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        paths.append(os.path.join(runtime, "containers", "auth.json"))
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(_home(), ".config")
    paths.append(os.path.join(config_home, "containers", "auth.json"))
    return [p for p in dict.fromkeys(paths) if p]


def _from_docker_config(registry: str, path: str, kind: str) -> RegistryCredential | None:
    """The login the file at ``path`` gives: its credential helper's for the registry, else its ``auths`` entry."""
    if not os.path.isfile(path):
        return None
    from runner.clients import credential_helpers

    config = docker_config.read(path, kind)
    key = HUB_AUTH_KEY if registry == HUB else registry
    helper = config.helper_for(key)
    found = credential_helpers.login(helper, key, config=path, registry=registry) if helper else None
    source = f"credential helper {credential_helpers.PREFIX}{helper}" if found else f"{kind} {path}"
    found = found or config.login_for(key)  # a helper that holds nothing: the file's own entry, as docker pull does
    if not found:
        return None
    if found.get("IdentityToken"):
        return RegistryCredential(registry, "", Secret(found["IdentityToken"]), source, identity_token=True)
    user, password = found.get("username") or "", found.get("password") or ""
    if not user and not password:
        return None  # an empty 'auths' entry (the login lives in a store that has nothing)
    return RegistryCredential(registry, user, Secret(password), source)


# ------------------------------------------------------------------ header

def auth_header(cred: RegistryCredential) -> str:
    """The ``X-Registry-Auth`` value for the Engine API (URL-safe base64 of the auth JSON, as the docker CLI sends it)."""
    server = HUB_AUTH_KEY if cred.registry == HUB else cred.registry
    if cred.identity_token:
        body = {"identitytoken": cred.password.reveal(), "serveraddress": server}
    else:
        body = {"username": cred.username, "password": cred.password.reveal(), "serveraddress": server}
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode()


# ------------------------------------------------------------------ login check

def _is_loopback(host: str) -> bool:
    """``host[:port]`` names a loopback address."""
    return is_loopback(urllib.parse.urlsplit(f"//{host}").hostname or host)


class _Answer:
    def __init__(self, status: int, headers, body: bytes):
        self.status, self.headers, self.body = status, headers, body


class _CredentialWithheld(Exception):
    """The registry moved a credentialed request where the credential may not go."""


class _CredentialRedirects(urllib.request.HTTPRedirectHandler):
    """Carry the credential on a redirect only within its origin; refuse to move it anywhere else.

    urllib resends every header it was given on any redirect (https -> http
    and other hosts too); the credential is an unredirected header here, put
    back only for a same-origin target.
    """

    def __init__(self, configured: str):
        super().__init__()
        self.configured = configured

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        target = urllib.parse.urljoin(req.full_url, newurl)
        credential = {k: v for k, v in req.unredirected_hdrs.items() if k.lower() == "authorization"}
        if credential or req.data is not None:
            if not same_origin(target, req.full_url):
                raise _CredentialWithheld(f"redirected to another origin, {show_origin(target)}")
            refusal = transport_refusal(self.configured, target)
            if refusal:
                raise _CredentialWithheld(f"redirected: {refusal}")
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            for key, value in credential.items():
                new.add_unredirected_header(key, value)
        return new


def _open(url: str, timeout: float, headers: dict | None = None, data: bytes | None = None, *,
          configured: str = "", credential: dict | None = None) -> _Answer:
    """One HTTP call; any HTTP status is an answer, anything else raises OSError.

    ``credential`` (an Authorization header) and a ``data`` body are sent only
    where :func:`transport_refusal` allows for the registry at ``configured``.
    """
    if credential or data is not None:
        refusal = transport_refusal(configured or url, url)
        if refusal:
            raise _CredentialWithheld(refusal)
    host = urllib.parse.urlsplit(url).netloc
    handlers = [_CredentialRedirects(configured or url)]
    if _is_loopback(host):
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data is not None else "GET")
    for key, value in (credential or {}).items():
        request.add_unredirected_header(key, value)
    try:
        with opener.open(request, timeout=timeout) as resp:
            return _Answer(resp.status, resp.headers, resp.read(1 << 20))
    except urllib.error.HTTPError as exc:
        return _Answer(exc.code, exc.headers, exc.read(1 << 16) if exc.fp else b"")
    except urllib.error.URLError as exc:
        reason = exc.reason
        raise reason if isinstance(reason, OSError) else OSError(str(reason)) from None


def _challenge(header: str) -> tuple[str, dict[str, str]]:
    """``Bearer realm="…",service="…"`` → ("bearer", {realm, service, …})."""
    scheme, _, rest = (header or "").strip().partition(" ")
    params = {k.lower(): v for k, v in re.findall(r'(\w+)="([^"]*)"', rest)}
    return scheme.lower(), params


def check_login(cred: RegistryCredential, timeout: float = 15.0) -> None:
    """Validate ``cred`` against the registry's ``/v2/`` without pulling: Basic, or the Bearer token handshake.

    Refused → ConfigError (exit 2) naming the registry and the source; not
    reachable → EngineUnavailable (exit 1). Never a value in a message.
    """
    host = api_host(cred.registry)
    schemes = ("https", "http") if _is_loopback(host) else ("https",)  # loopback registries may speak plain HTTP, as Docker allows
    last: BaseException | None = None
    for scheme in schemes:
        base = f"{scheme}://{host}"
        try:
            first = _open(f"{base}/v2/", timeout)
        except ssl.SSLError as exc:  # e.g. a plain-HTTP registry on loopback
            last = exc
            continue
        except OSError as exc:
            last = exc
            break
        try:
            _login(cred, base, first, timeout)
            return
        except _CredentialWithheld as exc:
            raise EngineUnavailable(
                f"registry {cred.registry}: the credential was not sent: {exc}",
                hint="the registry (or something in front of it) moves logins elsewhere; use the address that answers "
                     "directly over https, if you trust it",
            ) from None
        except OSError as exc:
            last = exc
            break
    raise EngineUnavailable(
        f"registry {cred.registry} is not reachable ({last.__class__.__name__}: {last})",
        hint=f"check the registry address and the network from this host (curl -sI {schemes[-1]}://{host}/v2/)",
    )


def _refused(cred: RegistryCredential, detail: str) -> ConfigError:
    return ConfigError(Problem(
        f"registry {cred.registry} refused {cred.describe()}{': ' + detail if detail else ''}",
        hint=f"log in again (docker login {cred.registry if cred.registry != HUB else ''}".rstrip() + ") or fix the credential in its source",
    ))


def _unexpected(cred: RegistryCredential, what: str, answer: _Answer) -> EngineUnavailable:
    return EngineUnavailable(
        f"registry {cred.registry} answered {what} with HTTP {answer.status}",
        hint="the registry may be down or behind a proxy that rewrites its answers; try again later",
    )


def _login(cred: RegistryCredential, base: str, first: _Answer, timeout: float) -> None:
    if first.status == 200:
        return  # an open registry: nothing to refuse
    if first.status != 401:
        raise _unexpected(cred, "/v2/", first)
    scheme, params = _challenge(first.headers.get("WWW-Authenticate", ""))
    if scheme == "basic":
        if cred.identity_token:
            raise _refused(cred, "it asks for a password, and the credential is an identity token")
        return _v2_signed_in(cred, base, f"Basic {_basic(cred)}", timeout, refused="", what="the login")
    if scheme == "bearer" and params.get("realm"):
        token = _bearer_token(cred, base, params, timeout)
        return _v2_signed_in(cred, base, f"Bearer {token}", timeout, refused="the token it issued is not accepted",
                             what="/v2/ with its token")
    raise RuntimeFailure(f"registry {cred.registry} asks for an authentication scheme the runner does not speak ({scheme or 'none'})",
                         hint="pull once with docker pull to check the credential")


def _basic(cred: RegistryCredential) -> str:
    return base64.b64encode(f"{cred.username}:{cred.password.reveal()}".encode()).decode()


def _v2_signed_in(cred: RegistryCredential, base: str, authorization: str, timeout: float, refused: str, what: str) -> None:
    """``/v2/`` asked again with ``authorization``: accepted, refused (the credential) or an unexpected answer."""
    answer = _open(f"{base}/v2/", timeout, configured=base, credential={"Authorization": authorization})
    if answer.status == 200:
        return
    if answer.status in (401, 403):
        raise _refused(cred, refused)
    raise _unexpected(cred, what, answer)


def _bearer_token(cred: RegistryCredential, base: str, params: dict[str, str], timeout: float) -> str:
    realm = params["realm"]
    query = {"service": params["service"]} if params.get("service") else {}
    if cred.identity_token:  # OAuth2 refresh-token grant, as the Docker daemon does with an identity token
        form = urllib.parse.urlencode({**query, "grant_type": "refresh_token", "refresh_token": cred.password.reveal(),
                                       "client_id": "primus-runner"}).encode()
        answer = _open(realm, timeout, {"Content-Type": "application/x-www-form-urlencoded"}, data=form, configured=base)
    else:
        url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode({**query, "account": cred.username})
        answer = _open(url, timeout, configured=base, credential={"Authorization": f"Basic {_basic(cred)}"})
    if answer.status in (401, 403):
        raise _refused(cred, "")
    if answer.status != 200:
        raise _unexpected(cred, "the token request", answer)
    try:
        body = json.loads(answer.body)
        token = body.get("token") or body.get("access_token")
    except (ValueError, AttributeError):
        token = None
    if not token:
        raise _unexpected(cred, "the token request (no token in the answer)", answer)
    return token


def check_registry(image: str, lookup: Lookup, *, env_names: tuple[str, str, str] = ENV_NAMES, timeout: float = 15.0) -> str:
    """For ``check``: which credential would pull ``image``, validated against the registry (no pull).

    Returns the line to print; raises like :func:`check_login` (exit 2 refused, exit 1 unreachable).
    """
    cred = credentials_for(image, lookup, env_names=env_names)
    if cred is None:
        return f"registry {registry_of(image)}: no credential found (anonymous pull)"
    check_login(cred, timeout)
    return f"registry {cred.registry}: {cred.describe()} accepted"
