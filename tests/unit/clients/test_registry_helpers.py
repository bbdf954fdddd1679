"""The registry lookup runs only the credential helper your own configuration names: a
cloned repository's ``./.env`` cannot choose the Docker config (``DOCKER_CONFIG``,
``REGISTRY_AUTH_FILE``, ``XDG_CONFIG_HOME``), and a helper name with a path in it
(``"credsStore": "x/evil"`` resolves to ``./docker-credential-x/evil``) is never run.
The repository's helper writes a canary file; it must never exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_in_clone

from runner.clients.registry import credentials_for
from runner.errors import ConfigError


def plant_helper(repo: Path, canary: Path) -> None:
    """``./docker-credential-x/evil``, which a helper named ``x/evil`` resolves to from ``repo``."""
    helper = repo / "docker-credential-x" / "evil"
    helper.parent.mkdir(parents=True)
    helper.write_text(f"#!/bin/sh\ntouch {canary}\necho '{{\"Username\": \"u\", \"Secret\": \"s\"}}'\n")
    helper.chmod(0o755)


@pytest.mark.parametrize("variable,file", [("DOCKER_CONFIG", "dcfg/config.json"), ("REGISTRY_AUTH_FILE", "auth.json")])
def test_an_env_file_cannot_choose_the_registry_config_and_its_helper(clone, tmp_path, variable, file):
    """``check`` looks the login up as ``up``'s pull and ``submit``'s preflight do (one lookup)."""
    (clone / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: 127.0.0.1:5999/team/img:1\n")
    canary = tmp_path / "PWNED-helper"
    plant_helper(clone, canary)
    config = clone / file
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"credsStore": "x/evil"}))
    (clone / ".env").write_text(f"{variable}=./{Path(file).parent if variable == 'DOCKER_CONFIG' else file}\n")
    (clone / ".env").chmod(0o600)
    result = run_in_clone(clone, "check", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert not canary.exists(), f"check ran the repository's credential helper ({result.stderr})"
    assert "Traceback" not in result.stderr


def test_a_helper_name_with_a_path_in_your_own_config_is_refused_not_run(tmp_path, monkeypatch):
    canary = tmp_path / "PWNED-helper"
    plant_helper(tmp_path, canary)
    (tmp_path / "dcfg").mkdir()
    (tmp_path / "dcfg" / "config.json").write_text(json.dumps({"credHelpers": {"ghcr.io": "x/evil"}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "dcfg"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        credentials_for("ghcr.io/org/img:1", {}.get)
    assert not canary.exists()
    assert info.value.exit_code == 2 and "not a plain name" in str(info.value) and "credHelpers" in str(info.value)


def test_a_helper_found_through_a_relative_path_entry_is_refused_not_run(tmp_path, monkeypatch):
    """``PATH=bin:…`` (or ``.``) resolves a plain name in the current directory: the repository's."""
    import os

    canary = tmp_path / "PWNED-helper"
    helper = tmp_path / "bin" / "docker-credential-plain"
    helper.parent.mkdir()
    helper.write_text(f"#!/bin/sh\ntouch {canary}\necho '{{\"Username\": \"u\", \"Secret\": \"s\"}}'\n")
    helper.chmod(0o755)
    (tmp_path / "dcfg").mkdir()
    (tmp_path / "dcfg" / "config.json").write_text(json.dumps({"credsStore": "plain"}))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "dcfg"))
    monkeypatch.setenv("PATH", "bin" + os.pathsep + os.environ["PATH"])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        credentials_for("ghcr.io/org/img:1", {}.get)
    assert not canary.exists()
    assert "relative PATH entry" in str(info.value)
