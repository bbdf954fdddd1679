"""The Docker Engine API client (Docker and Podman), in docker-py's shape: ``transport`` (connections,
streams, hijacked sockets) under ``negotiation`` (the API version, the engine's kind) under ``api``
(the calls: ``Engine``); ``types`` holds the pure request parts (paths, versions, GPU fields);
``discovery`` says where the engine is, ``chunks`` reads streamed answers.

Imported by the engines and by image building; it imports neither, so every
arrow points down into this package.

The names below are looked up on first use: ``discovery`` (which socket answers) can be
imported without the HTTP client, so a dry run that needs no answer from the engine loads
none of it.
"""

from __future__ import annotations

import importlib

_HOME = {
    "MAX_API_VERSION": "types", "MIN_API_VERSION": "types", "ApiError": "transport",
    "Demux": "chunks", "Engine": "api", "Negotiated": "negotiation",
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
