"""A cloned repository's endpoints receive none of your tokens: an attacker's HTTP
server on loopback, named by the repository's ``.primus.yaml`` or ``.env``, sees no
request from ``check --online`` or from a launch on Docker until ``primus-runner trust``."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from cli_runner import run_in_clone
from engine_fixtures import assert_no_leak
from registry_helpers import test_registry  # noqa: F401 (a fixture)


@pytest.fixture
def attacker(servers):
    """An HTTP server on loopback that records every request (headers and body) and answers 404."""
    return servers(lambda _server, _request: (404, {}, b"{}"))


TOKENS = {"MLFLOW_TRACKING_TOKEN": f"canary-mlflow-token-{uuid.uuid4().hex}", "WANDB_API_KEY": uuid.uuid4().hex + uuid.uuid4().hex[:8]}


def run(repo: Path, *args: str, env: dict | None = None):
    return run_in_clone(repo, *args, timeout=180, env={**TOKENS, **(env or {})})


def _config(image: str, env_entries: str = "[]") -> str:
    return (f"container:\n  gpu: none\n  options:\n    image: {image}\n    group-add: []\n    privileged: false\n"
            f"    env: {env_entries}\n"
            "trackers:\n  framework: generic\n  disable_mlflow: false\n  mlflow_experiment_name: trust-test\n"
            "  disable_wandb: false\n  wandb_project: trust-test\n")


@pytest.mark.parametrize("where", ["config", "env-file"])
def test_an_untrusted_endpoint_receives_no_token_on_check_online_or_launch(clone, attacker, busybox_image, where):
    url = attacker.url
    if where == "config":
        (clone / ".primus.yaml").write_text(_config(busybox_image, f"[MLFLOW_TRACKING_URI={url}, WANDB_BASE_URL={url}]"))
    else:
        (clone / ".primus.yaml").write_text(_config(busybox_image))
        (clone / ".env").write_text(f"MLFLOW_TRACKING_URI={url}\nWANDB_BASE_URL={url}\n")
        (clone / ".env").chmod(0o600)
    name = f"trust-{uuid.uuid4().hex[:8]}"
    try:
        for args in (("check", "--online"), ("up", "--name", name, "--", "true")):
            result = run(clone, *args)
            seen = attacker.raw()  # every request, headers and body, as text
            assert TOKENS["MLFLOW_TRACKING_TOKEN"] not in seen and "Authorization" not in seen, f"{args[0]} sent a token there"
            assert attacker.requests == [], f"{args[0]} contacted the repository's endpoint"
            assert result.returncode == 2, result.stderr
            assert "MLFLOW_TRACKING_URI" in result.stderr and "primus-runner trust" in result.stderr
            assert_no_leak(result.stdout + result.stderr, TOKENS, " ".join(args))
        ps = subprocess.run(["docker", "ps", "-aq", "--filter", f"name={name}"], capture_output=True, text=True)
        assert ps.stdout.strip() == "", "nothing was launched"
        # The same check once the user trusts the files: the server does receive the token
        # (so the empty record above means something).
        assert run(clone, "trust").returncode == 0
        run(clone, "check", "--online")
        assert TOKENS["MLFLOW_TRACKING_TOKEN"] in attacker.raw(), attacker.requests
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def test_up_never_runs_a_credential_helper_an_untrusted_env_file_chose(clone, docker_client, test_registry, tmp_path):
    """``up``'s pull looks the registry login up: a ``./.env`` with ``DOCKER_CONFIG=./dcfg``, whose
    ``credsStore`` is ``x/evil`` (``./docker-credential-x/evil``), must not run the repository's program.
    The image is one the registry does not hold: the pull is attempted, nothing is ever launched."""
    canary = tmp_path / "PWNED-helper"
    helper = clone / "docker-credential-x" / "evil"
    helper.parent.mkdir(parents=True)
    helper.write_text(f"#!/bin/sh\ntouch {canary}\necho '{{\"Username\": \"u\", \"Secret\": \"s\"}}'\n")
    helper.chmod(0o755)
    (clone / "dcfg").mkdir()
    (clone / "dcfg" / "config.json").write_text('{"credsStore": "x/evil"}')
    (clone / ".env").write_text("DOCKER_CONFIG=./dcfg\n")
    (clone / ".env").chmod(0o600)
    image = f"{test_registry.addr}/primus-test/absent-{uuid.uuid4().hex[:8]}:1"
    (clone / ".primus.yaml").write_text(f"container:\n  gpu: none\n  options:\n    image: {image}\n    group-add: []\n")
    name = f"trust-{uuid.uuid4().hex[:8]}"
    try:
        result = run(clone, "up", "--name", name, "--", "true")
        assert not canary.exists(), f"up ran the repository's credential helper ({result.stderr})"
        assert result.returncode == 2 and "without a login" in result.stderr, result.stderr  # an anonymous pull, refused
        assert "Traceback" not in result.stderr
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
