"""The process's one Engine API client: one discovery, one version negotiation, one connection.

Every module that speaks to Docker or Podman asks here. ``preference`` is
``container.engine`` (auto | docker | podman): the first call decides, so a
command asks with its config's preference before anything else does.
"""

from __future__ import annotations

from runner.clients.engine_api.api import Engine

_client: Engine | None = None


def engine_client(preference: str | None = None, timeout: float | None = None) -> Engine:
    """The shared client; ``timeout`` raises its socket timeout (a build waits longer than a ping)."""
    global _client
    if _client is None:
        _client = Engine(preference=preference or "auto")
    if timeout is not None and timeout > _client.timeout:
        _client.timeout = timeout
    return _client


def engine_at(host: str | None) -> Engine:
    """A client for the engine at ``host`` (a run's record names it): the shared one when it is that engine.
    It never makes the shared one for a ``host``: the command's own ``container.engine`` chooses that
    (``down`` reads its runs' records before it asks for its engine)."""
    if _client is None and host:
        return Engine(host=host)
    shared = engine_client()
    if not host or host == shared.host:
        return shared
    return Engine(host=host)


def thread_client(host: str) -> Engine:
    """A client of its own for a background thread (the shared one's keep-alive connection is not
    for two threads at once), at the engine the shared one found: ``host``."""
    return Engine(host=host)
