"""runner.clients.engine_api.transport: connections to the engine, errors as the daemon says them,
streams on a connection of their own. The engine is a loopback server recording requests."""

from __future__ import annotations

import pytest

from engine_fixtures import free_port
from loopback_servers import Server
from runner.clients.engine_api.transport import ApiError, Transport
from runner.errors import EngineUnavailable


@pytest.fixture
def daemon():
    answers = {
        "/ok": (200, {"Content-Type": "application/json"}, {"fine": True}),
        "/conflict": (500, {"Content-Type": "application/json"}, {"message": "the container name \"x\" is already in use by 1f2e. You have to remove "
                               "that container to be able to reuse that name: that name is already in use"}),
        "/missing": (404, {"Content-Type": "application/json"}, {"message": "no such container: x"}),
        "/plain": (500, {"Content-Type": "text/plain"}, b"something broke\n"),
        "/logs": (200, {"Content-Type": "application/octet-stream"}, b"line one\nline two\n"),
    }
    with Server(lambda _s, request: answers[request["path"]]) as server:
        yield server


def test_only_unix_and_tcp_engines_are_reached():
    with pytest.raises(EngineUnavailable) as refused:
        Transport(host="ssh://user@host")
    assert "unix:// or tcp:// only" in str(refused.value)


def test_a_roundtrip_gives_status_lowercased_headers_and_body(daemon):
    transport = Transport(host=f"tcp://{daemon.netloc}")
    status, headers, raw = transport._roundtrip("GET", "/ok", None, {}, 5.0)
    assert (status, headers["content-type"], raw) == (200, "application/json", b'{"fine": true}')
    assert [r["path"] for r in daemon.requests] == ["/ok"]


def test_errors_carry_the_daemons_own_message_and_podmans_name_conflict_is_409(daemon):
    transport = Transport(host=f"tcp://{daemon.netloc}")
    conflict = transport._api_error(*transport._roundtrip("GET", "/conflict", None, {}, 5.0)[::2])
    assert isinstance(conflict, ApiError) and conflict.status == 409 and "already in use" in conflict.message
    missing = transport._api_error(*transport._roundtrip("GET", "/missing", None, {}, 5.0)[::2])
    assert (missing.status, missing.message) == (404, "no such container: x")
    plain = transport._api_error(*transport._roundtrip("GET", "/plain", None, {}, 5.0)[::2])
    assert (plain.status, plain.message) == (500, "something broke")


def test_a_stream_yields_the_body_and_raises_the_daemons_error(daemon):
    transport = Transport(host=f"tcp://{daemon.netloc}")
    assert b"".join(transport._stream("GET", "/logs", None, None)) == b"line one\nline two\n"
    with pytest.raises(ApiError) as failed:
        list(transport._stream("GET", "/missing", None, None))
    assert failed.value.status == 404


def test_an_engine_that_does_not_listen_is_unavailable_not_a_traceback():
    transport = Transport(host=f"tcp://127.0.0.1:{free_port()}")  # nothing listens there
    with pytest.raises(EngineUnavailable):
        transport._roundtrip("GET", "/_ping", None, {}, 5.0)
    with pytest.raises(EngineUnavailable):
        transport._head("/containers/x/archive")
