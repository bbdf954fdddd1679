"""Where a credential may travel (runner.clients.origins): the registry login check never carries
one to another origin or over a downgrade, and the rules themselves, case by case.

Hostile registries on 127.0.0.1 (https with a throw-away certificate trusted
through SSL_CERT_FILE, or plain http) answer the login with a redirect or a
token realm somewhere else; a collector server there records what it got. The
canary password exists only in the credential under test.
"""

from __future__ import annotations

import base64
import uuid

import pytest

from engine_fixtures import assert_no_leak
from loopback_servers import Server, make_cert
from runner.clients.origins import is_loopback, origin, same_origin, show_origin, transport_refusal
from runner.clients.registry import RegistryCredential, check_login
from runner.errors import EngineUnavailable
from runner.secrets import Secret


@pytest.fixture
def cert(tmp_path, monkeypatch):
    made = make_cert(tmp_path / "tls")
    monkeypatch.setenv("SSL_CERT_FILE", str(made.cert))
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    return made


def password() -> str:
    return f"canary-registry-origin-{uuid.uuid4().hex}"


def collector_answer(server, request):
    return 200, {"Content-Type": "application/json"}, {"token": "collected"}


def basic_registry(redirect_to: str, status: int = 302):
    """/v2/ asks for Basic; a request that carries it is redirected to ``redirect_to``."""
    def answer(server, request):
        if "Authorization" not in request["headers"]:
            return 401, {"WWW-Authenticate": 'Basic realm="registry"'}, b""
        return status, {"Location": redirect_to + request["path"]}, b""
    return answer


def assert_withheld(collector: Server, secret: str, info) -> None:
    """The other origin was never contacted (a redirect followed without the credential would still
    tell it the user's request), the error says the credential was not sent, nothing shows the value."""
    assert collector.requests == [], "the other origin was contacted"
    assert_no_leak(collector.raw(), [secret], "the other origin's requests")
    text = f"{info.value} {info.value.hint}"
    assert info.value.exit_code == 1 and "not sent" in text
    assert_no_leak(text, [secret], "the error")


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_basic_login_never_follows_an_https_to_http_redirect(cert, servers, status):
    secret = password()
    collector = servers(collector_answer)
    registry = servers(basic_registry(collector.url, status), tls=cert)
    with pytest.raises(EngineUnavailable) as info:
        check_login(RegistryCredential(registry.netloc, "alice", Secret(secret), "test"), timeout=5)
    assert registry.requests, "the https registry was asked"
    assert_withheld(collector, secret, info)
    assert collector.url in str(info.value)


def test_basic_login_never_follows_a_redirect_to_another_https_origin(cert, servers):
    secret = password()
    other = servers(collector_answer, tls=cert, host_name="localhost")
    registry = servers(basic_registry(other.url), tls=cert)
    with pytest.raises(EngineUnavailable) as info:
        check_login(RegistryCredential(registry.netloc, "alice", Secret(secret), "test"), timeout=5)
    assert_withheld(other, secret, info)


def test_plain_http_loopback_registry_never_carries_the_login_to_another_port(servers):
    secret = password()
    collector = servers(collector_answer)
    registry = servers(basic_registry(collector.url))
    with pytest.raises(EngineUnavailable) as info:
        check_login(RegistryCredential(registry.netloc, "alice", Secret(secret), "test"), timeout=5)
    assert_withheld(collector, secret, info)


def test_a_same_origin_redirect_keeps_the_login(servers):
    secret = password()
    good = "Basic " + base64.b64encode(f"alice:{secret}".encode()).decode()

    def answer(server, request):
        auth = request["headers"].get("Authorization")
        if auth is None:
            return 401, {"WWW-Authenticate": 'Basic realm="registry"'}, b""
        if request["path"] == "/v2/":
            return 307, {"Location": "/v2/moved/"}, b""
        return (200 if auth == good else 401), {}, b"{}"

    registry = servers(answer)
    check_login(RegistryCredential(registry.netloc, "alice", Secret(secret), "test"), timeout=5)
    assert [r["path"] for r in registry.requests] == ["/v2/", "/v2/", "/v2/moved/"]


def bearer_registry(realm: str, token: str):
    def answer(server, request):
        if request["headers"].get("Authorization") == f"Bearer {token}":
            return 200, {}, b"{}"
        return 401, {"WWW-Authenticate": f'Bearer realm="{realm}",service="reg"'}, b""
    return answer


@pytest.mark.parametrize("identity_token", [False, True])
def test_a_plain_http_token_realm_of_an_https_registry_gets_nothing(cert, servers, identity_token):
    secret = password()
    collector = servers(collector_answer)
    registry = servers(bearer_registry(f"{collector.url}/token", "t"), tls=cert)
    cred = RegistryCredential(registry.netloc, "" if identity_token else "alice", Secret(secret), "test", identity_token)
    with pytest.raises(EngineUnavailable) as info:
        check_login(cred, timeout=5)
    assert collector.requests == [], "the plain-http realm was contacted"
    assert_withheld(collector, secret, info)


def test_a_token_realm_on_another_https_host_keeps_working(cert, servers):
    """Docker Hub's realm (auth.docker.io) is not the registry's host: that is normal and must work."""
    secret, token = password(), uuid.uuid4().hex
    good = "Basic " + base64.b64encode(f"alice:{secret}".encode()).decode()

    def realm_answer(server, request):
        if request["headers"].get("Authorization") == good and "service=reg" in request["path"]:
            return 200, {"Content-Type": "application/json"}, {"token": token}
        return 401, {}, b"{}"

    realm = servers(realm_answer, tls=cert, host_name="localhost")
    registry = servers(bearer_registry(f"{realm.url}/token", token), tls=cert)
    check_login(RegistryCredential(registry.netloc, "alice", Secret(secret), "test"), timeout=5)
    assert len(realm.requests) == 1
    assert_no_leak(registry.raw(), [secret], "the registry (it sees the token, never the password)")


def test_a_failing_credential_helper_never_has_its_answer_quoted(tmp_path, monkeypatch):
    """The helper prints its whole answer (the Secret field a canary) and then exits 1."""
    import json
    import os

    from registry_helpers import write_docker_config
    from runner.clients.registry import credentials_for
    from runner.errors import ConfigError

    secret = password()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helper = bin_dir / "docker-credential-primusfails"
    answer = json.dumps({"ServerURL": "ghcr.io", "Username": "alice", "Secret": secret})
    helper.write_text(f"#!/bin/sh\nprintf '%s' '{answer}'\nexit 1\n")
    helper.chmod(0o700)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    write_docker_config(tmp_path / "dc", {"credsStore": "primusfails"})
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "dc"))
    with pytest.raises(ConfigError) as info:
        credentials_for("ghcr.io/org/img", {}.get)
    text = f"{info.value} {info.value.hint}"
    assert_no_leak(text, [secret], "the helper failure")
    assert info.value.exit_code == 2 and "docker-credential-primusfails" in text and "status 1" in text


# ------------------------------------------------------------------ the rules themselves (runner.clients.origins)

def test_an_origin_is_scheme_host_and_port_with_the_default_filled_in_and_case_folded():
    assert origin("HTTPS://Registry.Example/v2/") == ("https", "registry.example", 443)
    assert origin("http://h:8080/x?y") == ("http", "h", 8080)
    assert origin("http://h:notaport/") == ("http", "h", None)  # a port urllib cannot read is no port, not a crash
    assert origin("ftp://h/") == ("ftp", "h", None)
    assert same_origin("http://h/a", "http://H:80/b") and same_origin("https://[::1]/", "https://[::1]:443/")
    assert not same_origin("http://h/", "https://h/") and not same_origin("http://h:5000/", "http://h:5001/")
    assert not same_origin("http://127.0.0.1/", "http://localhost/")  # two names are two origins


def test_an_origin_is_shown_without_the_userinfo_a_url_carries():
    secret = f"canary-userinfo-{uuid.uuid4().hex}"
    url = f"http://alice:{secret}@registry.example:5000/v2/"
    assert show_origin(url) == "http://registry.example:5000"
    assert show_origin("https://[::1]/token") == "https://[::1]:443"
    refusal = transport_refusal(f"https://bob:{secret}@registry.example/", url) or ""
    assert "no downgrade" in refusal
    assert_no_leak(refusal, [secret], "the transport refusal")


@pytest.mark.parametrize("host, loopback", [
    ("localhost", True), ("LOCALHOST", True), ("127.0.0.1", True), ("127.9.9.9", True), ("::1", True), ("[::1]", True),
    ("localhost.evil.example", False), ("127.0.0.1.nip.io", False), ("10.0.0.1", False), ("::ffff:10.0.0.1", False), ("", False),
])
def test_only_localhost_and_loopback_addresses_are_loopback(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("configured, url, refusal", [
    ("https://r.example/", "https://auth.other.example/token", None),  # a token realm on another https host is normal
    ("http://127.0.0.1:5000/", "https://auth.other.example/token", None),
    ("http://127.0.0.1:5000/", "http://localhost:5001/token", None),  # plain http between loopback addresses only
    ("https://r.example/", "ftp://r.example/x", "ftp://r.example is not an http(s) address"),
    ("https://127.0.0.1:5000/", "http://127.0.0.1:5000/v2/",
     "http://127.0.0.1:5000 is plain http and https://127.0.0.1:5000 was reached over https (no downgrade)"),
    ("http://127.0.0.1:5000/", "http://r.example/token",
     "http://r.example:80 is plain http; credentials travel over plain http only on loopback"),
    ("http://r.example/", "http://127.0.0.1/token",
     "http://127.0.0.1:80 is plain http; credentials travel over plain http only on loopback"),
])
def test_where_a_credential_may_travel(configured, url, refusal):
    assert transport_refusal(configured, url) == refusal
