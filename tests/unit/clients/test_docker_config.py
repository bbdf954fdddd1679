"""runner.clients.docker_config reads a Docker config's logins as docker-py's ``docker.auth`` does
(the SDK is a test dependency here, the oracle): the same ``auths`` entry for every registry
spelling, the same helper for every key; a file that is not a Docker config is refused naming
the file and the entry, never a value; and reading it imports no SDK."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import docker.auth
import pytest

from runner.clients.docker_config import read
from runner.errors import ConfigError


def _auth(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


CONFIGS = [
    {"auths": {"127.0.0.1:5599": {"auth": _auth("u", "p:with:colons")}}},
    {"auths": {"https://index.docker.io/v1/": {"auth": _auth("hub", "pw")}, "reg.example:443": {}}},
    {"auths": {"http://legacy.example/v1/": {"auth": _auth("old", "x")}, "tok.example": {"identitytoken": "t0k"}}},
    {"auths": {"index.docker.io": {"auth": _auth("i", "j"), "email": "a@b"}}, "HttpHeaders": {"X": "y"}},
    {"credsStore": "desktop", "auths": {"x.example": {}}},
    {"credHelpers": {"x.example": "pass", "https://index.docker.io/v1/": "hub"}, "credsStore": "secretservice"},
    {"credHelpers": {"x.example": "pass"}, "auths": {"y.example": {"auth": _auth("y", "z")}}},
]
KEYS = ["127.0.0.1:5599", "https://index.docker.io/v1/", "docker.io", "index.docker.io", "legacy.example",
        "reg.example:443", "tok.example", "x.example", "y.example", "absent.example", ""]


def _sdk_login(sdk: docker.auth.AuthConfig, key: str):
    """docker-py's auths answer with no store asked (``resolve_authconfig`` with the stores taken out)."""
    entry = docker.auth.AuthConfig({"auths": sdk.auths}).resolve_authconfig(key or None)
    return None if entry is None else {k: v for k, v in entry.items() if k != "email"}


@pytest.mark.parametrize("config", CONFIGS)
def test_the_read_is_docker_pys(tmp_path, config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    ours, sdk = read(str(path)), docker.auth.load_config(config_path=str(path))
    for key in KEYS:
        assert ours.login_for(key) == _sdk_login(sdk, key), key
        assert ours.helper_for(key) == sdk.get_credential_store(key or None), key


@pytest.mark.parametrize("body, named", [
    ("{not json", "not JSON"), ("[1, 2]", "not a JSON object"), ('{"auths": ["x"]}', "'auths' is not a map"),
    ('{"auths": {"x.example": "not-a-map"}}', "entry for x.example"),
    ('{"auths": {"x.example": {"auth": "%%%canary-undecodable%%%"}}}', "'auth' of x.example"),
    ('{"credsStore": ["x"]}', "'credsStore'"), ('{"credHelpers": {"x.example": 1}}', "'credHelpers'"),
])
def test_a_file_that_is_not_a_docker_config_is_refused_naming_it_and_no_value(tmp_path, body, named):
    path = tmp_path / "config.json"
    path.write_text(body)
    with pytest.raises(ConfigError) as info:
        read(str(path), "podman auth file")
    text = f"{info.value} {info.value.hint}"
    assert info.value.exit_code == 2 and f"the podman auth file {path} is not valid" in text and named in text
    assert "canary-undecodable" not in text


def test_a_legacy_auth_only_file_is_no_login(tmp_path):
    """A top-level ``{registry: {auth}}`` map is ``~/.dockercfg``'s format, which docker pull no longer reads
    from config.json (docker-py still does): no login, not a guess."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"x.example": {"auth": _auth("legacy", "form")}}))
    assert read(str(path)).login_for("x.example") is None


def test_the_registry_lookup_imports_no_sdk(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIGS[0]))
    code = ("import sys\nfrom runner.clients.registry import credentials_for\n"
            "cred = credentials_for('127.0.0.1:5599/x/y:1', {}.get)\n"
            "print(cred.username, cred.source.split()[0], sorted(m for m in ('docker', 'requests', 'urllib3') if m in sys.modules))")
    env = {**os.environ, "DOCKER_CONFIG": str(tmp_path), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout.split()
    assert out == ["u", "docker", "[]"]


def test_no_module_of_the_runner_imports_the_docker_sdk():
    """The SDK is a test dependency only (pyproject): an import of it in the runner would fail on a user's install."""
    import ast
    from pathlib import Path

    import runner

    found = []
    for path in Path(runner.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path}:{node.lineno}" for name in names if name.split(".")[0] == "docker"]
    assert found == []
