"""Push a local image to its registry with the credentials a pull of it would use (``build --push``).

The credential comes from the same places as the pull's (Docker config, Podman's auth
file, ``DOCKER_LOGIN_*``) and travels only in the engine's ``X-Registry-Auth`` header.
A refused credential is exit 2, an unreachable registry 1, as for a pull.
"""

from __future__ import annotations

from urllib.parse import quote

from runner.clients.engine_api.transport import ApiError
from runner.clients.engine_api.chunks import json_messages
from runner.clients.engine_api.pull import _failure, split_reference


def push(engine, image: str, lookup, out=None) -> str:
    """Push ``image``; returns the pushed digest (or "" when the engine reports none)."""
    from runner.clients.registry import auth_header, credentials_for

    credential = credentials_for(image, lookup)
    # The daemon refuses a push without the header; "{}" (anonymous) lets the registry answer for itself.
    headers = {"X-Registry-Auth": auth_header(credential) if credential is not None else "e30="}
    repo, tag = split_reference(image)
    digest = ""
    try:
        for message in json_messages(engine.stream(f"/images/{quote(repo, safe='/:')}/push", {"tag": tag}, method="POST",
                                                   headers=headers)):
            if "error" in message:
                error = str(message.get("error") or (message.get("errorDetail") or {}).get("message") or "unknown error")
                raise _failure(image, credential, error, None)
            aux = message.get("aux")
            if isinstance(aux, dict) and aux.get("Digest"):
                digest = str(aux["Digest"])
            elif out is not None and message.get("status") and not message.get("id"):
                out.debug(str(message["status"]))
    except ApiError as exc:
        raise _failure(image, credential, exc.message, exc.status) from None
    return digest
