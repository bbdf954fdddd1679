"""An ``env:`` reference is a rename, and a rename obeys ``passthrough.deny``: a cloned
repository's ``secrets: {Y_TOKEN: "env:AWS_SECRET_ACCESS_KEY"}`` must not forward a variable
your own config denies under another name, nor a variable that configures the runner."""

from __future__ import annotations

import json

from cli_runner import run_in_clone
from engine_fixtures import assert_no_leak


def test_an_env_reference_to_a_denied_variable_is_refused(tmp_path):
    secret = "canary-aws-secret-4d1e8b0f6a2c"
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".primus.yaml").write_text("passthrough:\n  deny: [AWS_SECRET_ACCESS_KEY]\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    env: [Y_TOKEN]\n"
                                       "secrets:\n  Y_TOKEN: env:AWS_SECRET_ACCESS_KEY\n")
    result = run_in_clone(repo, "--json", "plan", "--", "true", env={"AWS_SECRET_ACCESS_KEY": secret})
    forwarded = sorted(json.loads(result.stdout)["secrets"]) if result.returncode == 0 else []
    assert result.returncode == 2, f"forwarded under another name: {forwarded}"
    assert "secrets.Y_TOKEN" in result.stderr and "AWS_SECRET_ACCESS_KEY" in result.stderr and "passthrough.deny" in result.stderr
    assert_no_leak(result.stdout + result.stderr, {"AWS_SECRET_ACCESS_KEY": secret}, "plan")


def test_an_env_reference_to_a_runner_variable_is_refused(tmp_path):
    (tmp_path / "home").mkdir()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    env: [X_TOKEN]\n"
                                       "secrets:\n  X_TOKEN: env:PRIMUS_RUNNER_TRUST_PROJECT\n")
    result = run_in_clone(repo, "plan", "--", "true", env={"PRIMUS_RUNNER_TRUST_PROJECT": "0"})
    assert result.returncode == 2 and "secrets.X_TOKEN" in result.stderr, result.stderr
