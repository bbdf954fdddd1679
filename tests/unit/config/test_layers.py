"""Which files a command reads (runner.config.layers): the checkout's runner/.primus.yaml,
~/.primus.yaml, the project file found up to the repository root, PRIMUS_RUNNER_CONFIG, --config.

And which files are the project's, as git's ``safe.directory`` decides it: a second real user
plants a repository marker and a ``.primus.yaml`` in a shared sticky directory (written by
that user's own process, ``setpriv``); the runner, run by you beside it, must not make them
your project. A relative ``$PRIMUS_RUNNER_CONFIG`` is the directory's, not yours."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from cli_runner import run_cli
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


# ------------------------------------------------------------------ another user's files

OTHER = "primus-runner-other"


@pytest.fixture(scope="session")
def other_uid() -> int:
    if os.geteuid() != 0:
        pytest.skip("creating a second user needs root")
    try:
        return pwd.getpwnam(OTHER).pw_uid
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER], check=True, capture_output=True)
        return pwd.getpwnam(OTHER).pw_uid


def as_other(uid: int, script: str) -> None:
    """``sh -c script`` as the other user (their process, their files)."""
    subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sh", "-c", script], check=True)


@pytest.fixture
def home(tmp_path):
    """Your home (and cache and state), with your own ~/.primus.yaml."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: mine:1\n")
    return home


def run(cwd: Path, home: Path, *args: str, env: dict | None = None):
    return run_cli(cwd, *args, home=home, env={"DOCKER_HOST": "unix:///nonexistent/docker.sock", **(env or {})})


@pytest.fixture
def shared():
    """A shared sticky directory like /tmp (in /tmp: the other user must reach it)."""
    directory = Path(tempfile.mkdtemp(prefix="primus-runner-shared-", dir="/tmp"))
    directory.chmod(0o1777)
    yield directory
    shutil.rmtree(directory)


def test_a_repository_marker_another_user_planted_does_not_make_their_file_your_project(shared, home, other_uid):
    as_other(other_uid, f"mkdir {shared}/.git && printf 'container:\\n  options:\\n    image: attacker/img:1\\n"
                        f"    volume: [\"/:/host\"]\\n    env: [HF_TOKEN]\\n' > {shared}/.primus.yaml")
    mine = shared / "mine"
    mine.mkdir()
    result = run(mine, home, "--json", "plan", "--", "true", env={"HF_TOKEN": "canary-hf-token-0b5e2a9c7d13"})
    assert result.returncode == 2, f"their file was loaded: {result.stdout[:300]}"
    assert "attacker/img" not in result.stdout and "canary-hf-token" not in result.stdout + result.stderr
    assert f"{shared}/.git is not loaded: it is owned by {OTHER} (uid {other_uid}), not by you" in result.stderr
    assert "chown" in result.stderr and "--config" in result.stderr and "Traceback" not in result.stderr
    named = run(mine, home, "--json", "--config", str(shared / ".primus.yaml"), "plan", "--", "true")
    assert named.returncode == 0 and json.loads(named.stdout)["image"] == "attacker/img:1", named.stderr


def test_a_project_file_of_another_user_in_the_current_directory_is_not_loaded(shared, home, other_uid):
    as_other(other_uid, f"printf 'container:\\n  options:\\n    image: attacker/img:1\\n' > {shared}/.primus.yaml")
    result = run(shared, home, "--json", "plan", "--", "true")
    assert result.returncode == 2 and "attacker/img" not in result.stdout
    assert f"the project file {shared}/.primus.yaml is not loaded: it is owned by {OTHER}" in result.stderr
    # the way the message offers: name the file, and it is yours to use
    named = run(shared, home, "--json", "--config", str(shared / ".primus.yaml"), "plan", "--", "true")
    assert named.returncode == 0 and json.loads(named.stdout)["image"] == "attacker/img:1", named.stderr


def test_an_env_file_of_another_user_is_not_loaded(shared, home, other_uid):
    as_other(other_uid, f"printf 'HF_ENDPOINT_X=1\\n' > {shared}/.env")
    result = run(shared, home, "plan", "--", "true")
    assert result.returncode == 2 and f"the env file {shared}/.env is not loaded" in result.stderr, result.stderr


def test_your_own_file_in_a_directory_every_user_may_write_is_not_loaded(tmp_path, home):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    (open_dir / ".primus.yaml").write_text("container:\n  options:\n    image: swapped:1\n")
    result = run(open_dir, home, "--json", "plan", "--", "true")
    assert result.returncode == 2 and f"its directory {open_dir} is writable by every user" in result.stderr
    open_dir.chmod(0o755)
    assert json.loads(run(open_dir, home, "--json", "plan", "--", "true").stdout)["image"] == "swapped:1"


def test_a_relative_primus_runner_config_is_the_directory_s_file_not_yours(tmp_path, home):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    pwned = tmp_path / "pwned"
    (repo / "cfg.yaml").write_text(f"container:\n  options:\n    env: [HF_TOKEN]\nsecrets:\n  HF_TOKEN: \"cmd:touch {pwned}\"\n")
    result = run(repo, home, "check", env={"PRIMUS_RUNNER_CONFIG": "cfg.yaml"})
    assert not pwned.exists(), "a relative PRIMUS_RUNNER_CONFIG made the repository's file yours"
    assert result.returncode == 2 and "secrets.HF_TOKEN" in result.stderr and "primus-runner trust" in result.stderr
    shown = json.loads(run(repo, home, "--json", "trust", "--show", env={"PRIMUS_RUNNER_CONFIG": "cfg.yaml"}).stdout)
    assert [f["path"] for f in shown["files"]] == [str(repo / "cfg.yaml")]
