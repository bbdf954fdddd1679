"""Which files a command reads: the checkout's runner/.primus.yaml, ~/.primus.yaml, the
project file found up to the repository root, PRIMUS_RUNNER_CONFIG, --config."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.config import load_config
from runner.config.layers import layer_files

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "primus-runner.primus.yaml"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("PRIMUS_PATH", "PRIMUS_RUNNER_CONFIG", "PRIMUS_RUNNER_TRUST_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_project_file_is_found_from_a_subdirectory_up_to_the_repository_root(tree, monkeypatch):
    repo = tree / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".primus.yaml").write_text("container:\n  options:\n    image: from-repo\n")
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    config = load_config()
    assert config.get("container", "options", "image") == "from-repo"
    assert str(repo / ".primus.yaml") in config.files
    assert [(f.kind, f.trusted) for f in config.loaded] == [("project", False)]


def test_the_search_stops_at_the_repository_root_and_outside_a_repository(tree, monkeypatch):
    (tree / ".primus.yaml").write_text("container:\n  options:\n    image: planted-above\n")  # e.g. /tmp/.primus.yaml
    repo = tree / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    assert layer_files(None) == []
    plain = tree / "plain" / "sub"  # no repository: only the current directory is looked at
    plain.mkdir(parents=True)
    (tree / "plain" / ".primus.yaml").write_text("container:\n  options:\n    image: parent\n")
    monkeypatch.chdir(plain)
    assert layer_files(None) == []


def test_checkout_file_sits_between_defaults_and_the_users_file(tree, monkeypatch):
    checkout = tree / "Primus"
    (checkout / "runner").mkdir(parents=True)
    (checkout / "runner" / "primus-cli-direct.sh").write_text("#!/bin/bash\n")
    shutil.copy(FIXTURE, checkout / "runner" / ".primus.yaml")
    (tree / "home" / ".primus.yaml").write_text("container:\n  options:\n    image: mine\n")
    monkeypatch.chdir(checkout)
    config = load_config()
    kinds = [f.kind for f in config.loaded]
    assert kinds == ["checkout", "user"]
    assert config.files[1] == str(checkout / "runner" / ".primus.yaml")
    assert config.get("container", "options", "image") == "mine"  # the user's file is above the launcher's
    env = config.get("container", "options", "env")
    assert "REBUILD_PRIMUS_TURBO" in env and len(env) >= 40  # the launcher's allowlist, merged with the defaults'
    assert config.get("container", "options", "name") == "primus-training"
    # $PRIMUS_PATH names the checkout from anywhere, as the launcher finds it.
    elsewhere = tree / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("PRIMUS_PATH", str(checkout))
    assert [f.kind for f in load_config().loaded] == ["checkout", "user"]


def test_primus_runner_config_is_a_layer_like_config(tree, monkeypatch):
    monkeypatch.chdir(tree)
    (tree / "env.yaml").write_text("container:\n  options:\n    image: from-env\n    env: [ENV_LAYER]\n")
    (tree / "flag.yaml").write_text("container:\n  options:\n    image: from-flag\n")
    monkeypatch.setenv("PRIMUS_RUNNER_CONFIG", str(tree / "env.yaml"))
    config = load_config()
    assert config.get("container", "options", "image") == "from-env" and config.loaded[-1].kind == "env"
    config = load_config(str(tree / "flag.yaml"))  # --config above it
    assert config.get("container", "options", "image") == "from-flag"
    assert "ENV_LAYER" in config.get("container", "options", "env")
    monkeypatch.setenv("PRIMUS_RUNNER_CONFIG", str(tree / "missing.yaml"))
    from runner.errors import ConfigError

    with pytest.raises(ConfigError, match="does not exist"):
        load_config()


def test_a_project_file_named_by_config_is_the_users(tree, monkeypatch):
    (tree / ".git").mkdir()
    (tree / ".primus.yaml").write_text("secrets:\n  HF_TOKEN: file:/run/secrets/hf\n")
    monkeypatch.chdir(tree)
    assert [(f.kind, f.trusted) for f in load_config(str(tree / ".primus.yaml")).loaded] == [("config", True)]
