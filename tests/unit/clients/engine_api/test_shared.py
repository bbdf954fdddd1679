"""The process's one Engine API client is chosen by the command's engine preference, not by whoever asks first."""

from __future__ import annotations

from runner.clients.engine_api import shared


def test_a_client_for_a_recorded_host_does_not_choose_the_shared_one(monkeypatch):
    """``down`` reads its runs' records (``engine_at(host)``) before it asks for the engine the config
    names: the shared client must still be made with that preference, not with ``auto``."""
    monkeypatch.setattr(shared, "_client", None)
    at = shared.engine_at("unix:///nonexistent/recorded.sock")
    assert at.host == "unix:///nonexistent/recorded.sock"
    assert shared._client is None  # nothing made; the command's engine_client(preference) decides later
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/chosen.sock")
    assert shared.engine_client("auto").host == "unix:///nonexistent/chosen.sock"
    assert shared.engine_at("unix:///nonexistent/chosen.sock") is shared._client  # the same engine: the shared client
