"""The Docker Engine API client (Docker and Podman): discovery, version negotiation, requests, streams.

Imported by the engines and by image building; it imports neither, so every
arrow points down into this package.
"""

from runner.clients.engine_api.client import (
    MAX_API_VERSION,
    MIN_API_VERSION,
    START_HINT,
    ApiError,
    Demux,
    Engine,
    Negotiated,
    docker_host,
)
from runner.clients.engine_api.discovery import EngineLocation, discover, unreachable

__all__ = [
    "MAX_API_VERSION", "MIN_API_VERSION", "START_HINT", "ApiError", "Demux", "Engine", "EngineLocation",
    "Negotiated", "discover", "docker_host", "unreachable",
]
