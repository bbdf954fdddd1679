"""A Docker config file's logins, read as the Docker CLI reads ``config.json`` (Podman's
``auth.json`` is the same format): ``auths`` (``auth``: base64 ``user:password``, or an
``identitytoken``), ``credsStore`` and ``credHelpers`` (which ``docker-credential-*`` program
holds a registry's login). Legacy ``~/.dockercfg`` formats are not read, as the Docker CLI no
longer reads them from ``config.json``. A file that is not this shape is refused (exit 2)
naming the file and the entry, never a value.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field

from runner.errors import ConfigError, Problem

INDEX_NAME = "docker.io"  # Docker Hub's index, as ``auths`` keys are matched
INDEX_URL = "https://index.docker.io/v1/"  # the key docker login and credential helpers store Hub's login under


def _hostname(url: str) -> str:
    return url.replace("http://", "").replace("https://", "").split("/", 1)[0]


def _index_name(name: str) -> str:
    name = _hostname(name)
    return INDEX_NAME if name == f"index.{INDEX_NAME}" else name


@dataclass(frozen=True)
class DockerConfig:
    path: str
    kind: str  # "docker config" | "podman auth file", for messages
    auths: dict = field(default_factory=dict)  # registry as written -> its login ({} when a store holds it)
    creds_store: str | None = None
    cred_helpers: dict = field(default_factory=dict)

    def helper_for(self, key: str) -> str | None:
        """The credential helper NAME (``docker-credential-NAME``) holding ``key``'s login, if any."""
        return self.cred_helpers.get(INDEX_URL if key in ("", INDEX_NAME) else key) or self.creds_store

    def login_for(self, key: str) -> dict | None:
        """``key``'s ``auths`` entry: the exact key first, then any spelling of the same host."""
        wanted = _index_name(key) if key else INDEX_NAME
        if wanted in self.auths:
            return self.auths[wanted]
        return next((login for name, login in self.auths.items() if _index_name(name) == wanted), None)


def read(path: str, kind: str = "docker config") -> DockerConfig:
    """The logins of the config file at ``path``; ConfigError when it is not a Docker config."""
    try:
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except OSError as exc:
        raise _invalid(kind, path, f"it cannot be read ({exc.strerror})") from None
    except ValueError:
        raise _invalid(kind, path, "it is not JSON") from None
    if not isinstance(config, dict):
        raise _invalid(kind, path, "it is not a JSON object")
    auths, store, helpers = config.get("auths") or {}, config.get("credsStore") or None, config.get("credHelpers") or {}
    if not isinstance(auths, dict):
        raise _invalid(kind, path, "'auths' is not a map")
    if store is not None and not isinstance(store, str):
        raise _invalid(kind, path, "'credsStore' is not a name")
    if not isinstance(helpers, dict) or not all(isinstance(name, str) for name in helpers.values()):
        raise _invalid(kind, path, "'credHelpers' is not a map of registries to names")
    return DockerConfig(path, kind, {registry: _entry(kind, path, registry, entry) for registry, entry in auths.items()}, store, helpers)


def _entry(kind: str, path: str, registry: str, entry) -> dict:
    """One ``auths`` entry: ``{"IdentityToken"}``, ``{"username", "password", "serveraddress"}``, or {}."""
    if not isinstance(entry, dict):
        raise _invalid(kind, path, f"the 'auths' entry for {registry} is not a map")
    if "identitytoken" in entry:
        return {"IdentityToken": entry["identitytoken"]}
    if "auth" not in entry:
        return {}  # a login kept in a store: an empty entry
    try:
        raw = entry["auth"]
        login, password = base64.b64decode(raw.encode("ascii") if isinstance(raw, str) else raw).split(b":", 1)
        return {"username": login.decode("utf8"), "password": password.decode("utf8"), "serveraddress": registry}
    except (ValueError, binascii.Error, UnicodeError, AttributeError, TypeError):
        raise _invalid(kind, path, f"the 'auth' of {registry} is not base64 of user:password") from None


def _invalid(kind: str, path: str, why: str) -> ConfigError:
    return ConfigError(Problem(f"the {kind} {path} is not valid: {why}",
                               hint="fix or remove its 'auths' entries, or log in again"))
