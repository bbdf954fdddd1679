"""A Docker config file's own logins (``auths``), read as the Docker SDK reads them, without the
SDK: importing it (requests, urllib3, …) cost `up --pull always` a quarter of a second before
the pull could start. Only the plain case is read here: valid JSON with an ``auths`` map of
entries and no credential store or helper. Anything else (a helper, a legacy or malformed
file) returns ``None`` and the caller asks the SDK, so every answer stays the SDK's.
"""

from __future__ import annotations

import base64
import binascii
import json

INDEX_NAME = "docker.io"  # the SDK's name for Docker Hub's index


def _hostname(url: str) -> str:
    return url.replace("http://", "").replace("https://", "").split("/", 1)[0]


def _index_name(name: str) -> str:
    name = _hostname(name)
    return INDEX_NAME if name == f"index.{INDEX_NAME}" else name


def _entry(registry: str, entry: dict) -> dict:
    """One ``auths`` entry as the SDK's ``parse_auth`` gives it."""
    if "identitytoken" in entry:
        return {"IdentityToken": entry["identitytoken"]}
    if "auth" not in entry:
        return {}  # a login kept in a store: an empty entry
    raw = entry["auth"]
    login, password = base64.b64decode(raw.encode("ascii") if isinstance(raw, str) else raw).split(b":", 1)
    return {"username": login.decode("utf8"), "password": password.decode("utf8"), "email": entry.get("email"),
            "serveraddress": registry}


def plain_login(path: str, key: str) -> tuple[bool, dict | None]:
    """(read here, the entry for registry ``key`` or None) from the config at ``path``; (False, None)
    when the file is not the plain case and the SDK must answer."""
    try:
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError):
        return False, None
    if not isinstance(config, dict) or config.get("credsStore") or config.get("credHelpers"):
        return False, None
    auths = config.get("auths")
    if not auths or not isinstance(auths, dict) or not all(isinstance(e, dict) for e in auths.values()):
        return False, None  # no auths section (a legacy auth-only file), or an entry the SDK refuses
    try:
        parsed = {registry: _entry(registry, entry) for registry, entry in auths.items()}
    except (ValueError, binascii.Error, UnicodeDecodeError, AttributeError, TypeError):
        return False, None  # a malformed entry: the SDK reports it its own way
    wanted = _index_name(key) if key else INDEX_NAME
    if wanted in parsed:
        return True, parsed[wanted]
    return True, next((conf for name, conf in parsed.items() if _index_name(name) == wanted), None)
