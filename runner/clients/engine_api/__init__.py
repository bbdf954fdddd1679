"""The Docker Engine API client (Docker and Podman): discovery, version negotiation, requests, streams.

Imported by the engines and by image building; it imports neither, so every
arrow points down into this package.

The names below are looked up on first use: ``discovery`` (which socket answers) can be
imported without the HTTP client, so a dry run that needs no answer from the engine loads
none of it.
"""

from __future__ import annotations

import importlib

_HOME = {
    "MAX_API_VERSION": "client", "MIN_API_VERSION": "client", "START_HINT": "client", "ApiError": "client",
    "Demux": "client", "Engine": "client", "Negotiated": "client", "docker_host": "client",
    "EngineLocation": "discovery", "discover": "discovery", "unreachable": "discovery",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
