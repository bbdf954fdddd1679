"""The trackers' HTTP: the credential only in the Authorization header and only to its own origin,
the server's errors in one shape, a URI's password split off before anything prints it."""

from __future__ import annotations

import base64
import json

import pytest

from loopback_servers import Server, json_answer, redirect_answer
from runner.secrets import Secret
from runner.trackers import httpapi
from runner.trackers.httpapi import Endpoint, HTTPFailure

CANARY = "httpapi-canary-9e2b7c41"


def endpoint(url: str, scheme: str = "bearer", user: str = "") -> Endpoint:
    return Endpoint("mlflow", url, url, scheme=scheme, user=user, secret=Secret(CANARY))


def test_the_credential_goes_in_the_authorization_header_only():
    with Server(json_answer(200, {"ok": 1})) as server:
        answer = httpapi.request(endpoint(server.url + "/prefix/"), "POST", "/api/2.0/runs", body={"name": "x"})
    assert answer == {"ok": 1}
    sent = server.requests[0]
    assert sent["path"] == "/prefix/api/2.0/runs" and json.loads(sent["body"]) == {"name": "x"}
    assert sent["headers"]["Authorization"] == f"Bearer {CANARY}"
    assert sent["headers"]["Content-Type"] == "application/json" and sent["headers"]["User-Agent"].startswith("primus-runner/")
    assert server.raw().count(CANARY) == 1


def test_basic_auth_and_no_auth():
    assert httpapi.authorization(endpoint("http://x", "basic", "ann")) == {
        "Authorization": "Basic " + base64.b64encode(f"ann:{CANARY}".encode()).decode()}
    assert httpapi.authorization(endpoint("http://x", "none")) == {}
    assert httpapi.authorization(Endpoint("mlflow", "http://x", "http://x")) == {}


def test_a_redirect_to_another_origin_is_refused_and_the_credential_never_sent_there():
    with Server(json_answer(200, {"stolen": True})) as collector, Server(redirect_answer(collector.url)) as front:
        with pytest.raises(HTTPFailure) as err:
            httpapi.request(endpoint(front.url), "GET", "/api/2.0/experiments/get")
    assert err.value.status == 302 and err.value.redirect == f"http://127.0.0.1:{collector.port}"
    assert "redirected to another origin" in err.value.detail and collector.requests == []
    assert CANARY not in err.value.detail


def test_a_redirect_within_the_origin_is_followed():
    def answer(server, request):
        if request["path"] == "/old":
            return 301, {"Location": "/new"}, b""
        return 200, {}, {"at": request["path"], "auth": request["headers"].get("Authorization") == f"Bearer {CANARY}"}

    with Server(answer) as server:
        assert httpapi.request(endpoint(server.url), "GET", "/old") == {"at": "/new", "auth": True}


def test_the_servers_error_is_its_code_and_message():
    with Server(json_answer(404, {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no experiment 7"})) as server:
        with pytest.raises(HTTPFailure) as err:
            httpapi.request(endpoint(server.url), "GET", "/x")
    assert (err.value.status, err.value.code, err.value.detail) == (404, "RESOURCE_DOES_NOT_EXIST", "HTTP 404: no experiment 7")
    with Server(lambda s, r: (200, {}, b"<html>login</html>")) as server:
        with pytest.raises(HTTPFailure, match="the answer is not JSON"):
            httpapi.request(endpoint(server.url), "GET", "/x")
        assert httpapi.request(endpoint(server.url), "PUT", "/x", raw=b"log", json_answer=False) == {}
        assert server.requests[-1]["headers"]["Content-Type"] == "text/plain; charset=utf-8"


def test_a_server_that_does_not_answer_is_status_0():
    with Server(json_answer()) as server:
        url = server.url
    with pytest.raises(HTTPFailure) as err:
        httpapi.request(endpoint(url), "GET", "/x", timeout=5)
    assert err.value.status == 0 and httpapi.failure_status(err.value) == "unreachable"


def test_failure_kinds():
    assert httpapi.failure_status(HTTPFailure(401, "")) == "unauthorised"
    assert httpapi.failure_status(HTTPFailure(403, "")) == "unauthorised"
    assert httpapi.failure_status(HTTPFailure(0, "", code="NOT_INSTALLED")) == "not-installed"
    assert httpapi.status("wandb", "ok", "fine") == {"tracker": "wandb", "status": "ok", "detail": "fine"}


def test_origins_fill_in_the_default_port():
    assert httpapi.origin("HTTPS://Host.Example/a") == ("https", "host.example", 443)
    assert httpapi.origin("http://h:8080/") == ("http", "h", 8080)
    assert httpapi.show_origin("http://h/x") == "http://h:80"
    assert httpapi.origin("http://h:99999/") == ("http", "h", None)


def test_a_uri_loses_its_userinfo_before_it_is_shown():
    assert httpapi.split_userinfo(f"https://ann:{CANARY}%2F@mlflow.example/p/") == ("https://mlflow.example/p", "ann", CANARY + "/")
    assert httpapi.split_userinfo("https://bob@h") == ("https://h", "bob", None)
    assert httpapi.split_userinfo("https://h/") == ("https://h", "", None)


@pytest.mark.parametrize("value, want", [("1", True), (" TRUE ", True), ("yes", True), ("on", True), ("0", False),
                                         ("", False), (None, False), ("no", False)])
def test_truthy(value, want):
    assert httpapi.truthy(value) is want
