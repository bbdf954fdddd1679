"""A token pasted where a key belongs is never echoed: not in the error, not in the GitHub
Actions annotation, not in ``trust --show``. Keys shaped like config keys or variable
names are still named, so the message says which key is wrong."""

from __future__ import annotations

import json
import uuid

import pytest

from cli_runner import run_cli, run_in_clone
from engine_fixtures import assert_no_leak


def token() -> str:
    return "ghp_" + uuid.uuid4().hex + "Zq"


@pytest.mark.parametrize("doc", ["{t}: 1\n", "container:\n  {t}: 1\n", "trackers:\n  metrics:\n    {t}: true\n",
                                 "container:\n  options:\n    {t}: x\n", "secrets:\n  sk-{t}: env:X\n",
                                 "secrets:\n  {t}: 'not a reference'\n"],
                         ids=["top", "section", "nested", "options", "secret-name", "secret-value"])
@pytest.mark.parametrize("ci", [False, True], ids=["terminal", "github-actions"])
def test_a_token_used_as_a_key_is_not_echoed(tmp_path, doc, ci):
    secret = token()
    (tmp_path / "bad.yaml").write_text(doc.format(t=secret))
    env = {"GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_WORKSPACE": str(tmp_path)} if ci else {}
    result = run_cli(tmp_path, "--config", "bad.yaml", "plan", "--", "true", env=env)
    assert result.returncode == 2 and "bad.yaml" in result.stderr + result.stdout, result.stderr
    assert "Traceback" not in result.stderr
    assert_no_leak(result.stdout + result.stderr, {"pasted key": secret}, "config error")


def test_a_typo_in_a_key_is_still_named(tmp_path):
    (tmp_path / "bad.yaml").write_text("container:\n  optionz: {}\n")
    result = run_cli(tmp_path, "--config", "bad.yaml", "plan", "--", "true")
    assert result.returncode == 2 and "unknown key 'optionz'" in result.stderr and "did you mean 'options'" in result.stderr


def test_trust_show_does_not_echo_a_token_used_as_a_key(tmp_path):
    secret = token()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    (repo / ".primus.yaml").write_text(f"secrets:\n  {secret}: 'cmd:true'\n")
    shown = run_in_clone(repo, "--json", "trust", "--show")
    assert shown.returncode == 0 and json.loads(shown.stdout)["files"][0]["asks"], shown.stderr
    assert_no_leak(shown.stdout + shown.stderr, {"pasted key": secret}, "trust --show")
