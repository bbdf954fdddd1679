"""runner.clients.registry: where a pull's credential comes from, its header, and the /v2/ login check.

The login check runs against the real password-protected registry of
``.ci/setup-registry.sh`` (fails under CI=true when it is missing); the Bearer
handshake against a small token-auth server in this file (the local registry
only speaks Basic).
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from dataclasses import dataclass

import pytest

from engine_fixtures import assert_no_leak, free_port
from registry_helpers import (HELPER_NAME, auths_entry, test_registry, write_credential_helper,  # noqa: F401 (fixture)
                              write_docker_config)
from runner.errors import ConfigError, EngineUnavailable
from runner.clients.registry import (ENV_NAMES, HUB, HUB_AUTH_KEY, RegistryCredential, api_host, auth_header, check_login,
                             credentials_for, registry_of)
from runner.secrets import Secret


@pytest.fixture(autouse=True)
def _no_user_logins(tmp_path, monkeypatch):
    """HOME is a fresh directory: the user's own Docker/Podman logins never take part."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("DOCKER_CONFIG", "REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, "")  # recorded, so what a test sets is undone
        monkeypatch.delenv(name)


def canary() -> str:
    return f"canary-registry-{uuid.uuid4().hex}"


def lookup_of(mapping: dict):
    return lambda name: mapping.get(name)


def user_env(**names: str):
    """Where the user's logins are: the process environment's (never a lookup's: an env file's)."""
    os.environ.update(names)
    return lookup_of({})


# ------------------------------------------------------------------ names

@pytest.mark.parametrize("image, registry", [
    ("ubuntu", HUB), ("ubuntu:22.04", HUB), ("rocm/primus:v26.5", HUB), ("docker.io/rocm/primus", HUB),
    ("index.docker.io/library/ubuntu", HUB), ("localhost/x", "localhost"), ("localhost:5000/x:1", "localhost:5000"),
    ("127.0.0.1:5599/primus-test/busybox:latest", "127.0.0.1:5599"), ("ghcr.io/org/img@sha256:" + "a" * 64, "ghcr.io"),
    ("Registry.Example.com/a/b", "registry.example.com"),
])
def test_registry_of(image, registry):
    assert registry_of(image) == registry


def test_hub_api_host_and_auth_key():
    assert api_host(HUB) == "registry-1.docker.io"
    assert api_host("ghcr.io") == "ghcr.io"
    cred = RegistryCredential(HUB, "u", Secret("p" * 10), "test")
    assert json.loads(base64.urlsafe_b64decode(auth_header(cred)))["serveraddress"] == HUB_AUTH_KEY


# ------------------------------------------------------------------ env

def test_env_login_for_the_image_registry():
    value = canary()
    env = {"DOCKER_LOGIN_USER": "alice", "DOCKER_LOGIN_KEY": value, "DOCKER_LOGIN_REGISTRY": "https://reg.example.com/"}
    cred = credentials_for("reg.example.com/team/img:1", lookup_of(env), docker_config="/nonexistent/config.json")
    assert cred.registry == "reg.example.com" and cred.username == "alice" and cred.source == "env DOCKER_LOGIN_*"
    assert isinstance(cred.password, Secret) and cred.password.reveal() == value
    assert_no_leak(repr(cred) + str(cred) + cred.describe(), [value], "the credential's repr/describe")
    decoded = json.loads(base64.urlsafe_b64decode(auth_header(cred)))
    assert decoded == {"username": "alice", "password": value, "serveraddress": "reg.example.com"}


def test_env_login_without_registry_means_docker_hub():
    env = {"DOCKER_LOGIN_USER": "alice", "DOCKER_LOGIN_KEY": canary()}
    assert credentials_for("rocm/primus:v26.5", lookup_of(env), docker_config="/nonexistent").registry == HUB
    # ... and does not apply to another registry's image
    assert credentials_for("ghcr.io/org/img", lookup_of(env), docker_config="/nonexistent") is None


def test_env_names_from_config():
    names = ("REG_USER", "REG_TOKEN", "REG_HOST")
    env = {"REG_USER": "bob", "REG_TOKEN": canary(), "REG_HOST": "ghcr.io"}
    cred = credentials_for("ghcr.io/org/img", lookup_of(env), env_names=names, docker_config="/nonexistent")
    assert cred.username == "bob" and cred.source == "env REG_USER/REG_TOKEN"
    assert credentials_for("ghcr.io/org/img", lookup_of(env), env_names=ENV_NAMES, docker_config="/nonexistent") is None


@pytest.mark.parametrize("given", ["DOCKER_LOGIN_USER", "DOCKER_LOGIN_KEY"])
def test_half_given_env_login_exits_2_naming_the_missing_name(given):
    value = canary()
    env = {given: value if given.endswith("KEY") else "alice", "DOCKER_LOGIN_REGISTRY": "ghcr.io"}
    with pytest.raises(ConfigError) as info:
        credentials_for("ghcr.io/org/img", lookup_of(env), docker_config="/nonexistent")
    missing = "DOCKER_LOGIN_KEY" if given == "DOCKER_LOGIN_USER" else "DOCKER_LOGIN_USER"
    assert info.value.exit_code == 2 and missing in str(info.value)
    assert_no_leak(str(info.value), [value], "the error")


# ------------------------------------------------------------------ docker config

def test_docker_config_auths(tmp_path):
    value = canary()
    auth = base64.b64encode(f"carol:{value}".encode()).decode()
    path = write_docker_config(tmp_path / "dc", {"auths": {"https://ghcr.io": {"auth": auth}, "other.io": {"auth": "eDp5"}}})
    cred = credentials_for("ghcr.io/org/img:1", user_env(DOCKER_CONFIG=str(tmp_path / "dc")))
    assert (cred.registry, cred.username, cred.password.reveal()) == ("ghcr.io", "carol", value)
    assert cred.source == f"docker config {path}"
    assert credentials_for("quay.io/org/img", user_env(DOCKER_CONFIG=str(tmp_path / "dc"))) is None


def test_docker_config_identity_token(tmp_path):
    value = canary()
    write_docker_config(tmp_path / "dc", {"auths": {"reg.example.com": {"identitytoken": value}}})
    cred = credentials_for("reg.example.com/a", user_env(DOCKER_CONFIG=str(tmp_path / "dc")))
    assert cred.identity_token and cred.password.reveal() == value
    assert json.loads(base64.urlsafe_b64decode(auth_header(cred))) == {"identitytoken": value, "serveraddress": "reg.example.com"}


def test_env_wins_over_docker_config(tmp_path):
    write_docker_config(tmp_path / "dc", {"auths": {"ghcr.io": {"auth": base64.b64encode(b"carol:x").decode()}}})
    user_env(DOCKER_CONFIG=str(tmp_path / "dc"))
    env = {"DOCKER_LOGIN_USER": "alice", "DOCKER_LOGIN_KEY": canary(), "DOCKER_LOGIN_REGISTRY": "ghcr.io"}
    assert credentials_for("ghcr.io/org/img", lookup_of(env)).username == "alice"


def test_credential_helper_through_cred_helpers_and_creds_store(tmp_path, monkeypatch, test_registry):
    write_credential_helper(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{__import__('os').environ['PATH']}")
    for body in ({"credHelpers": {test_registry.addr: HELPER_NAME}}, {"credsStore": HELPER_NAME}):
        write_docker_config(tmp_path / "dc", body)
        cred = credentials_for(test_registry.busybox, user_env(DOCKER_CONFIG=str(tmp_path / "dc")))
        assert cred.source == f"credential helper docker-credential-{HELPER_NAME}"
        assert (cred.username, cred.password.reveal()) == (test_registry.user, test_registry.password)
    # the helper has nothing for another registry: no credential, no error
    assert credentials_for("ghcr.io/x/y", user_env(DOCKER_CONFIG=str(tmp_path / "dc"))) is None


def test_missing_credential_helper_exits_1_with_the_fix(tmp_path):
    write_docker_config(tmp_path / "dc", {"credsStore": "nosuchhelper-primus"})
    with pytest.raises(EngineUnavailable) as info:
        credentials_for("ghcr.io/org/img", user_env(DOCKER_CONFIG=str(tmp_path / "dc")))
    assert info.value.exit_code == 1 and "docker-credential-nosuchhelper-primus" in str(info.value)
    assert "credsStore" in info.value.hint


def test_invalid_docker_config_exits_2(tmp_path):
    write_docker_config(tmp_path / "dc", {"auths": {"ghcr.io": "not a dict"}})
    with pytest.raises(ConfigError):
        credentials_for("ghcr.io/org/img", user_env(DOCKER_CONFIG=str(tmp_path / "dc")))


# ------------------------------------------------------------------ login check (real registry)

def test_check_login_accepts_the_right_password(test_registry):
    check_login(RegistryCredential(test_registry.addr, test_registry.user, Secret(test_registry.password), "test"), timeout=10)


def test_check_login_refuses_a_wrong_password_exit_2_without_the_value(test_registry):
    wrong = canary()
    cred = RegistryCredential(test_registry.addr, test_registry.user, Secret(wrong), "env DOCKER_LOGIN_*")
    with pytest.raises(ConfigError) as info:
        check_login(cred, timeout=10)
    text = f"{info.value} {info.value.hint}"
    assert info.value.exit_code == 2 and test_registry.addr in text and "env DOCKER_LOGIN_*" in text
    assert_no_leak(text, [wrong, test_registry.password], "the refusal")


def test_check_login_unreachable_registry_exit_1():
    value = canary()
    cred = RegistryCredential(f"127.0.0.1:{free_port()}", "u", Secret(value), "test")
    with pytest.raises(EngineUnavailable) as info:
        check_login(cred, timeout=5)
    assert info.value.exit_code == 1 and cred.registry in str(info.value)
    assert_no_leak(f"{info.value} {info.value.hint}", [value], "the error")


# ------------------------------------------------------------------ Bearer handshake

JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class _TokenLogin:
    user: str
    password: str
    token: str


def _token_registry(login: _TokenLogin):
    """/v2/ with a Bearer challenge, /token issuing a token for the right Basic login (as Docker Hub, GHCR)."""

    def answer(server, request):
        auth = request["headers"].get("Authorization", "")
        if request["path"].startswith("/token"):
            good = base64.b64encode(f"{login.user}:{login.password}".encode()).decode()
            if auth == f"Basic {good}" and "service=test-registry" in request["path"]:
                return 200, JSON, {"token": login.token}
            return 401, JSON, {"errors": [{"code": "UNAUTHORIZED"}]}
        if auth == f"Bearer {login.token}":
            return 200, JSON, {}
        return 401, {**JSON, "WWW-Authenticate": f'Bearer realm="{server.url}/token",service="test-registry"'}, {}

    return answer


@pytest.fixture
def token_registry(servers):
    login = _TokenLogin("dave", canary(), uuid.uuid4().hex)
    return servers(_token_registry(login)), login


def test_check_login_bearer_handshake(token_registry):
    server, login = token_registry
    addr = server.netloc
    check_login(RegistryCredential(addr, login.user, Secret(login.password), "test"), timeout=10)
    assert any(p.startswith("/token") and "account=dave" in p for p in (r["path"] for r in server.requests))
    wrong = canary()
    with pytest.raises(ConfigError) as info:
        check_login(RegistryCredential(addr, login.user, Secret(wrong), "docker config X"), timeout=10)
    assert info.value.exit_code == 2 and addr in str(info.value)
    assert_no_leak(str(info.value), [wrong, login.password], "the refusal")


def test_check_registry_for_check(test_registry):
    env = {"DOCKER_LOGIN_USER": test_registry.user, "DOCKER_LOGIN_KEY": test_registry.password,
           "DOCKER_LOGIN_REGISTRY": test_registry.addr}
    from runner.clients.registry import check_registry

    line = check_registry(test_registry.busybox, lookup_of(env))
    assert line == f"registry {test_registry.addr}: user {test_registry.user} from env DOCKER_LOGIN_* accepted"
    assert_no_leak(line, [test_registry.password], "check's line")
    assert "anonymous" in check_registry("ghcr.io/org/img", user_env(DOCKER_CONFIG="/nonexistent"))
    with pytest.raises(ConfigError):
        check_registry(test_registry.busybox, lookup_of({**env, "DOCKER_LOGIN_KEY": canary()}))


# ------------------------------------------------------------------ progress renderers

def test_plain_progress_one_line_per_layer_state_not_per_byte():
    from runner.ui.pull_progress import PlainPullProgress

    lines: list[str] = []
    p = PlainPullProgress(None, lines.append)
    p.begin("reg/x:1")
    p.layer("aaa", "Pulling fs layer", None, None)
    for current in range(0, 100_000_001, 1_000_000):
        p.layer("aaa", "Downloading", current, 100_000_000)
    p.layer("aaa", "Download complete", None, None)
    for current in range(0, 100_000_001, 5_000_000):
        p.layer("aaa", "Extracting", current, 100_000_000)
    p.layer("aaa", "Pull complete", None, None)
    p.end(True)
    assert lines[1:5] == ["  aaa: Pulling fs layer", "  aaa: Downloading (100.0 MB)", "  aaa: Download complete", "  aaa: Extracting"]
    assert lines[5] == "  aaa: Pull complete" and lines[6].startswith("pulled reg/x:1: 1 layer(s), 100.0 MB downloaded")
    assert len(lines) == 7


def test_progress_for_masks_a_credential_the_scope_does_not_know(capsys):
    from runner.ui.pull_progress import PlainPullProgress, PullProgress, progress_for
    from runner.secrets import secret_scope
    from runner.ui import Output

    value = canary()
    cred = RegistryCredential("reg.example.com", "u", Secret(value), "docker config X")
    out = Output(color=False, masker=secret_scope().masker)
    progress = progress_for(out, cred)
    assert isinstance(progress, PlainPullProgress)
    progress.status(f"Status: something quoting {value}")
    err = capsys.readouterr().err
    assert "something quoting ***" in err
    assert_no_leak(err, [value], "the progress output")
    assert type(progress_for(Output(json_mode=True, color=False), cred)) is PullProgress


def test_docker_hub_login_from_docker_config(tmp_path):
    """docker login (no server) stores Hub credentials under https://index.docker.io/v1/."""
    value = canary()
    auth = base64.b64encode(f"erin:{value}".encode()).decode()
    write_docker_config(tmp_path / "dc", {"auths": {HUB_AUTH_KEY: {"auth": auth}}})
    for image in ("rocm/primus:v26.5", "ubuntu", "docker.io/library/ubuntu:22.04"):
        cred = credentials_for(image, user_env(DOCKER_CONFIG=str(tmp_path / "dc")))
        assert (cred.registry, cred.username, cred.password.reveal()) == (HUB, "erin", value)


def test_podman_auth_file(tmp_path):
    value = canary()
    auth = base64.b64encode(f"frank:{value}".encode()).decode()
    runtime_auth = write_docker_config(tmp_path / "run" / "containers", {"auths": {"quay.io": {"auth": auth}}})
    (tmp_path / "run" / "containers" / "config.json").rename(tmp_path / "run" / "containers" / "auth.json")
    lookup = user_env(XDG_RUNTIME_DIR=str(tmp_path / "run"), HOME=str(tmp_path / "home"))
    cred = credentials_for("quay.io/org/img", lookup)
    assert cred.source == f"podman auth file {runtime_auth.with_name('auth.json')}" and cred.password.reveal() == value
    # a Docker config login for the same registry wins
    write_docker_config(tmp_path / "home" / ".docker", {"auths": {"quay.io": {"auth": base64.b64encode(b"gina:x").decode()}}})
    assert credentials_for("quay.io/org/img", lookup).username == "gina"
    # REGISTRY_AUTH_FILE
    other = write_docker_config(tmp_path / "elsewhere", {"auths": {"ghcr.io": {"auth": auth}}})
    cred = credentials_for("ghcr.io/org/img", user_env(REGISTRY_AUTH_FILE=str(other)))
    assert cred.source == f"podman auth file {other}"
