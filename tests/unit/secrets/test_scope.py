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


@pytest.mark.parametrize("url, part, field", [
    ("https://alice:{c}@ss@mlflow.example/x", "{c}@ss", "password"),  # a password containing @: up to the last @
    ("https://ghp_{c}@github.com/org/repo.git", "ghp_{c}", "username"),  # a token written as the user name
    ("https://{c}@git.example/r", "{c}", "username"),  # a long user name without a password
    ("http://a:{c}@h1,http://b:pw2@h2", "{c}", "password"),
])
def test_userinfo_is_parsed_as_urllib_does(url, part, field):
    value = canary("url")
    url, part = url.format(c=value), part.format(c=value)
    assert part in url_credentials(url)
    assert getattr(urllib.parse.urlsplit(url.split(",")[0]), field) == part


def test_a_login_name_is_not_a_credential():
    assert url_credentials("ssh://git@github.com/org/repo") == []
    assert url_credentials("https://alice@host/x") == []


def plan_env(work, env: dict) -> dict:
    config = {"container": {"gpu": "none", "options": {"image": "busybox", "env": ["MLFLOW_TRACKING_URI", "GIT_REMOTE"]}}}
    planned = plan_from(work, config, host=env, flags=["--gpu", "none"], name="j")
    return {d.name: d for d in planned.plan.job.forwarded}


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


def test_the_scope_holds_secret_names_and_url_passwords_only(monkeypatch):
    from runner.secrets import secret_scope

    token, password = canary("token"), canary("pw")
    source = {"HF_TOKEN": token, "PATH": "/usr/bin", "EMPTY_TOKEN": "",
              "MLFLOW_TRACKING_URI": f"https://u:{password}@mlflow.example"}
    scope = secret_scope([source], lambda name: name.endswith("TOKEN"))
    assert scope.names() == ["HF_TOKEN", "MLFLOW_TRACKING_URI (password in URL)"]
    assert sorted(s.reveal() for s in scope.values()) == sorted([token, password])
    assert scope.masker.mask(f"a {token} b {password} /usr/bin") == "a *** b *** /usr/bin"


def test_public_pairs_give_their_url_passwords_and_extra_adds_known_secrets():
    from runner.secrets import secret_scope

    password, known = canary("pw"), canary("known")
    scope = secret_scope(public=[("HTTPS_PROXY", f"http://p:{password}@proxy:3128"), ("LR", "0.1")],
                         extra=[("REGISTRY", Secret(known)), ("EMPTY", "")])
    assert scope.names() == ["HTTPS_PROXY (password in URL)", "REGISTRY"]
    assert "0.1" not in {s.reveal() for s in scope.values()}


def test_a_percent_encoded_url_password_is_in_scope_both_ways():
    from runner.secrets import url_passwords

    assert [s.reveal() for s in url_passwords("https://u:p%40ss-canary-1@host")] == ["p%40ss-canary-1", "p@ss-canary-1"]


def test_the_same_value_under_one_name_is_held_once_and_an_empty_scope_is_false():
    from runner.secrets import secret_scope

    value = canary("dup")
    scope = secret_scope([{"A_TOKEN": value}, {"A_TOKEN": value}], lambda name: True)
    assert len(scope.named) == 1 and scope
    assert not secret_scope([{"PATH": "/bin"}], lambda name: False)
