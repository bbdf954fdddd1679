"""The Docker Engine HTTP API client: socket discovery, requests, streams.

Imported by the engines and by image building; it imports neither, so every
arrow points down into this package.
"""

from runner.engine_api.client import START_HINT, ApiError, Demux, Engine, docker_host

__all__ = ["START_HINT", "ApiError", "Demux", "Engine", "docker_host"]
