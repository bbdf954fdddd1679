"""A Docker config's own logins read without the SDK give the SDK's answer for every registry
spelling; a file with a credential store or helper is left to the SDK; and the plain case loads
no SDK at all (counted: the modules a fresh process imports)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import pytest

from runner.clients.docker_auths import plain_login

docker_auth = pytest.importorskip("docker.auth")


def _auth(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


CONFIGS = [
    {"auths": {"127.0.0.1:5599": {"auth": _auth("u", "p:with:colons")}}},
    {"auths": {"https://index.docker.io/v1/": {"auth": _auth("hub", "pw")}, "reg.example:443": {}}},
    {"auths": {"http://legacy.example/v1/": {"auth": _auth("old", "x")}, "tok.example": {"identitytoken": "t0k"}}},
    {"auths": {"index.docker.io": {"auth": _auth("i", "j"), "email": "a@b"}}, "HttpHeaders": {"X": "y"}},
]
KEYS = ["127.0.0.1:5599", "https://index.docker.io/v1/", "docker.io", "index.docker.io", "legacy.example",
        "reg.example:443", "tok.example", "absent.example", ""]


@pytest.mark.parametrize("config", CONFIGS)
def test_the_plain_read_is_the_sdks(tmp_path, config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    for key in KEYS:
        read, found = plain_login(str(path), key)
        assert read
        assert found == docker_auth.load_config(config_path=str(path)).resolve_authconfig(key or None), key


@pytest.mark.parametrize("config", [{"credsStore": "desktop", "auths": {"x": {}}}, {"credHelpers": {"x": "pass"}},
                                    {"x.example": {"auth": _auth("legacy", "form")}}, {"auths": {"x": "not-a-map"}},
                                    {"auths": {"x": {"auth": "%%%"}}}])
def test_anything_else_is_left_to_the_sdk(tmp_path, config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert plain_login(str(path), "x") == (False, None)
    (tmp_path / "broken.json").write_text("{not json")
    assert plain_login(str(tmp_path / "broken.json"), "x") == (False, None)


def test_a_plain_login_loads_no_sdk(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIGS[0]))
    code = ("import sys\nfrom runner.clients.registry import credentials_for\n"
            "cred = credentials_for('127.0.0.1:5599/x/y:1', {}.get)\n"
            "print(cred.username, cred.source.split()[0], 'docker' in sys.modules)")
    env = {**os.environ, "DOCKER_CONFIG": str(tmp_path), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout.split()
    assert out == ["u", "docker", "False"]
