"""URL credentials the recogniser must not miss: userinfo parsed as urllib parses it."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.parse

import pytest

from engine_fixtures import assert_no_leak
from plan_factory import plan_from
from secret_ref_helpers import canary

from runner.secrets import Secret
from runner.secrets.scope import url_credentials


@pytest.mark.parametrize("url, part", [
    ("https://alice:{c}@ss@mlflow.example/x", "{c}@ss"),  # a password containing @: up to the last @
    ("https://ghp_{c}@github.com/org/repo.git", "ghp_{c}"),  # a token written as the user name
    ("https://{c}@git.example/r", "{c}"),  # a long user name without a password
    ("http://a:{c}@h1,http://b:pw2@h2", "{c}"),
])
def test_userinfo_is_parsed_as_urllib_does(url, part):
    value = canary("url")
    url, part = url.format(c=value), part.format(c=value)
    assert part in url_credentials(url)
    parsed = urllib.parse.urlsplit(url.split(",")[0])
    assert part in (parsed.password, parsed.username)


def test_a_login_name_is_not_a_credential():
    assert url_credentials("ssh://git@github.com/org/repo") == []
    assert url_credentials("https://alice@host/x") == []


def plan_env(work, env: dict) -> dict:
    config = {"container": {"gpu": "none", "options": {"image": "busybox", "env": ["MLFLOW_TRACKING_URI", "GIT_REMOTE"]}}}
    planned = plan_from(work, config, host=env, flags=["--gpu", "none"], name="j")
    return {d.name: d for d in planned.plan.forwarded}


def test_plan_carries_both_as_secrets_and_never_shows_them(work):
    password, token = canary("pw") + "@ss", "ghp_" + canary("tok")
    env = {"MLFLOW_TRACKING_URI": f"https://alice:{password}@mlflow.example", "GIT_REMOTE": f"https://{token}@github.com/o/r"}
    forwarded = plan_env(work, env)
    for name in env:  # secret → through the shim, never in Config.Env, refused by check_clean
        assert forwarded[name].secret and isinstance(forwarded[name].value, Secret), name
    for args in (["plan", "--", "echo", password, token], ["--json", "plan", "--", "true"]):
        result = subprocess.run([sys.executable, "-m", "runner", *args], cwd=work, capture_output=True, text=True, timeout=60,
                                env={**os.environ, "HOME": str(work), "NO_COLOR": "1", **env})
        assert result.returncode == 0, result.stderr
        assert_no_leak(result.stdout + result.stderr, {"password with @": password, "token as user": token}, str(args[:2]))
