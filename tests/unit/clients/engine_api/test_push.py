"""``build --push`` (runner.clients.engine_api.push): the credential a pull would use travels only in
the ``X-Registry-Auth`` header, the digest comes back from the stream, and a failure is the pull's
exit code (refused 2, unreachable 1) without the credential's value. The engine is a loopback
server that records every request."""

from __future__ import annotations

import base64
import json

import pytest

from engine_fixtures import assert_no_leak, make_canary
from loopback_servers import Server
from runner.clients.engine_api.api import Engine
from runner.clients.engine_api.push import push
from runner.errors import ConfigError, EngineUnavailable

REGISTRY = "registry.example:5000"
IMAGE = f"{REGISTRY}/team/app:v1"


def engine_answering(lines: list[dict] | None = None, status: int = 200, error: dict | None = None):
    """An engine whose push answers ``lines`` (one JSON document a line), or ``status`` with ``error``."""
    def answer(_server, request):
        if request["path"].endswith("/_ping") or request["path"].endswith("/version"):
            return 200, {"Api-Version": "1.43", "Content-Type": "application/json"}, {"ApiVersion": "1.43", "Version": "24.0.0"}
        if status != 200:
            return status, {"Content-Type": "application/json"}, error or {}
        return 200, {"Content-Type": "application/json"}, b"".join(json.dumps(m).encode() + b"\n" for m in lines or [])
    return answer


class Debug:
    def __init__(self):
        self.lines: list[str] = []

    def debug(self, message: str) -> None:
        self.lines.append(message)


@pytest.fixture(autouse=True)
def no_logins(tmp_path, monkeypatch):
    """No Docker config or Podman auth file of the host's: the only login is the one a test gives."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("REGISTRY_AUTH_FILE", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)


@pytest.fixture
def key():
    return make_canary()["HF_TOKEN"]


def login(key: str):
    values = {"DOCKER_LOGIN_USER": "alice", "DOCKER_LOGIN_KEY": key, "DOCKER_LOGIN_REGISTRY": REGISTRY}
    return values.get


def pushes(server) -> list[dict]:
    return [r for r in server.requests if "/push" in r["path"]]


def test_the_login_travels_only_in_the_header_and_the_digest_comes_back(key):
    lines = [{"status": "The push refers to repository [registry.example:5000/team/app]"},
             {"status": "Pushing", "id": "l1", "progressDetail": {"current": 1, "total": 2}},
             {"status": "v1: digest: sha256:abc size: 528"},
             {"aux": {"Tag": "v1", "Digest": "sha256:abc", "Size": 528}}]
    out = Debug()
    with Server(engine_answering(lines)) as server:
        digest = push(Engine(host=f"tcp://{server.netloc}"), IMAGE, login(key), out)
    assert digest == "sha256:abc"
    [request] = pushes(server)
    assert request["method"] == "POST"
    assert request["path"].split("?")[0].endswith("/images/registry.example:5000/team/app/push")
    assert request["path"].split("?")[1] == "tag=v1"
    sent = json.loads(base64.urlsafe_b64decode(request["headers"]["X-Registry-Auth"]))
    assert sent == {"username": "alice", "password": key, "serveraddress": REGISTRY}
    # A layer's progress (it has an id) is not a status line; the repository's and the digest's are.
    assert out.lines == [lines[0]["status"], lines[2]["status"]]
    others = [dict(r, headers={k: v for k, v in r["headers"].items() if k != "X-Registry-Auth"}) for r in server.requests]
    assert_no_leak(json.dumps(others, default=lambda b: b.decode("utf-8", "replace")), [key], "the requests besides the header")


def test_without_a_login_the_header_is_the_anonymous_one_and_no_digest_is_empty():
    with Server(engine_answering([{"status": "Pushed", "id": "l1"}])) as server:
        assert push(Engine(host=f"tcp://{server.netloc}"), "localhost:5000/app", lambda _name: None) == ""
    [request] = pushes(server)
    assert request["headers"]["X-Registry-Auth"] == "e30="  # {}: the daemon refuses a push without the header
    assert base64.b64decode("e30=") == b"{}"
    assert request["path"].split("?")[1] == "tag=latest"


def test_a_refused_login_in_the_stream_is_exit_2_naming_its_source_not_its_value(key):
    lines = [{"status": "Preparing", "id": "l1"}, {"errorDetail": {"message": "unauthorized: authentication required"},
                                                     "error": "unauthorized: authentication required"}]
    with Server(engine_answering(lines)) as server, pytest.raises(ConfigError) as refused:
        push(Engine(host=f"tcp://{server.netloc}"), IMAGE, login(key))
    assert refused.value.exit_code == 2
    text = str(refused.value) + repr(refused.value) + str(refused.value.hint or "")
    assert "user alice from env DOCKER_LOGIN_*" in text and REGISTRY in text
    assert_no_leak(text, [key], "the refusal")


def test_an_error_with_only_its_detail_is_still_reported():
    lines = [{"error": "", "errorDetail": {"message": "dial tcp 10.0.0.1:5000: connect: connection refused"}}]
    with Server(engine_answering(lines)) as server, pytest.raises(EngineUnavailable) as unreachable:
        push(Engine(host=f"tcp://{server.netloc}"), IMAGE, lambda _name: None)
    assert unreachable.value.exit_code == 1
    assert "not reachable" in str(unreachable.value) and "connection refused" in str(unreachable.value)


def test_the_engine_refusing_the_call_is_the_pulls_answer_for_its_status(key):
    error = {"message": "An image does not exist locally with the tag: registry.example:5000/team/app"}
    with Server(engine_answering(status=404, error=error)) as server, pytest.raises(ConfigError) as missing:
        push(Engine(host=f"tcp://{server.netloc}"), IMAGE, login(key))
    assert missing.value.exit_code == 2
    assert f"image {IMAGE} was not found" in str(missing.value)
    assert_no_leak(str(missing.value) + repr(missing.value), [key], "the not-found error")
