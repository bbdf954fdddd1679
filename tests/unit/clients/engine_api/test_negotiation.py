"""runner.clients.engine_api.negotiation: the API version asked once per process and engine, capped
at what the runner knows, refused below what it needs. The engine is a loopback server."""

from __future__ import annotations

import pytest

from loopback_servers import Server
from runner.clients.engine_api.negotiation import Negotiating
from runner.clients.engine_api.types import MAX_API_VERSION, MIN_API_VERSION
from runner.errors import EngineUnavailable, UsageError


def engine(ping_headers: dict, version: dict | None = None):
    def answer(_server, request):
        if request["path"] == "/_ping":
            return 200, ping_headers, b"OK"
        if request["path"] == "/version":
            return (200, {"Content-Type": "application/json"}, version) if version else (404, {}, b"")
        return 400, {"Content-Type": "application/json"}, {"message": "client version 1.41 is too old. Minimum supported API version is 1.44"}
    return Server(answer)


@pytest.fixture(autouse=True)
def _no_forced_version(monkeypatch):
    monkeypatch.delenv("DOCKER_API_VERSION", raising=False)


def test_the_daemons_version_is_used_and_asked_once_per_process():
    with engine({"Api-Version": "1.43", "Server": "Docker/24.0.0 (linux)"}) as server:
        first, second = Negotiating(host=f"tcp://{server.netloc}"), Negotiating(host=f"tcp://{server.netloc}")
        assert first.path("/containers/json", {"all": 1}) == "/v1.43/containers/json?all=1"
        assert second.api_version == "1.43" and second.kind == "docker"
    assert [r["path"] for r in server.requests] == ["/_ping"]


def test_a_newer_daemon_is_spoken_to_at_the_newest_version_the_runner_knows_and_podman_is_named():
    with engine({"Api-Version": "1.99", "Libpod-Api-Version": "5.0.0", "Server": "Libpod/5.0.0 (linux)"}) as server:
        api = Negotiating(host=f"tcp://{server.netloc}").negotiate()
    assert (api.api_version, api.daemon_api_version, api.kind, api.source) == (MAX_API_VERSION, "1.99", "podman", "ping")


def test_an_older_daemon_is_refused_with_what_the_runner_needs():
    with engine({"Api-Version": "1.30"}) as server:
        with pytest.raises(EngineUnavailable) as refused:
            Negotiating(host=f"tcp://{server.netloc}").negotiate()
    assert f"needs {MIN_API_VERSION} or newer" in str(refused.value)


def test_without_a_ping_header_the_version_endpoint_answers():
    with engine({}, {"ApiVersion": "1.41", "MinAPIVersion": "1.12", "Components": [{"Name": "Podman Engine"}]}) as server:
        api = Negotiating(host=f"tcp://{server.netloc}").negotiate()
    assert (api.api_version, api.kind, api.source) == ("1.41", "podman", "version")


def test_docker_api_version_is_used_without_asking_and_a_bad_one_is_a_usage_error(monkeypatch):
    with engine({"Api-Version": "1.43"}) as server:
        monkeypatch.setenv("DOCKER_API_VERSION", "1.44")
        api = Negotiating(host=f"tcp://{server.netloc}").negotiate()
        assert (api.api_version, api.source) == ("1.44", "DOCKER_API_VERSION") and server.requests == []
        monkeypatch.setenv("DOCKER_API_VERSION", "latest")
        with pytest.raises(UsageError):
            Negotiating(host=f"tcp://{server.netloc}").negotiate()


def test_a_daemon_that_finds_the_version_too_old_says_which_to_try():
    with engine({"Api-Version": "1.41"}) as server:
        transport = Negotiating(host=f"tcp://{server.netloc}")
        status, _, raw = transport._roundtrip("GET", transport.path("/info"), None, {}, 5.0)
        error = transport._api_error(status, raw)
    assert isinstance(error, EngineUnavailable) and "refuses API version 1.41" in str(error)
    assert "DOCKER_API_VERSION=1.44" in (error.hint or "")


def test_describe_is_what_the_engine_says_about_itself_at_the_negotiated_version():
    version = {"Version": "5.2.1", "ApiVersion": "1.41", "MinAPIVersion": "1.24",
               "Components": [{"Name": "Podman Engine", "Version": "5.2.1"}]}

    def answer(_server, request):
        if request["path"] == "/_ping":
            return 200, {"Api-Version": "1.41"}, b"OK"  # no Server header: the kind comes from /version
        if request["path"] == "/v1.41/version":
            return 200, {"Content-Type": "application/json"}, version
        return 404, {}, b""

    with Server(answer) as server:
        described = Negotiating(host=f"tcp://{server.netloc}").describe()
    assert described == {"engine": "podman", "host": f"tcp://{server.netloc}", "source": "given host",
                         "version": "5.2.1", "api_version": "1.41", "daemon_api_version": "1.41", "min_api_version": "1.24"}
    assert [r["path"] for r in server.requests] == ["/_ping", "/v1.41/version"]
