"""The trust store and what an untrusted project file may not ask for."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from runner.config import load_config, trust
from runner.errors import ConfigError


@pytest.fixture
def project(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("PRIMUS_PATH", "PRIMUS_RUNNER_CONFIG", "PRIMUS_RUNNER_TRUST_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(repo)
    return repo


def _refused(text: str, project: Path) -> list[str]:
    (project / ".primus.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config()
    for problem in err.value.problems:  # every refusal names the file and the way out
        assert str(project / ".primus.yaml") in problem.message and "primus-runner trust" in problem.hint
    return [str(p) for p in err.value.problems]


@pytest.mark.parametrize("text,key", [
    ("secrets:\n  HF_TOKEN: \"cmd:sh -c 'id > /tmp/x'\"\n", "secrets.HF_TOKEN"),
    ("secrets:\n  WANDB_API_KEY: file:~/.ssh/id_ed25519\n", "secrets.WANDB_API_KEY"),
    ("secrets:\n  HF_TOKEN: pass:ml/hf\n", "secrets.HF_TOKEN"),
    ("secrets:\n  HF_TOKEN: aws-sm:prod/hf\n", "secrets.HF_TOKEN"),
    ("container:\n  options:\n    env: [NCCL_DEBUG, MLFLOW_TRACKING_URI=http://127.0.0.1:9]\n", "container.options.env[1]"),
    ("container:\n  options:\n    env: [WANDB_BASE_URL=http://127.0.0.1:9]\n", "container.options.env[0]"),
    ("container:\n  options:\n    env: [DATABRICKS_HOST=https://evil.example]\n", "container.options.env[0]"),
    ("container:\n  options:\n    env: [DOCKER_LOGIN_REGISTRY=evil.example]\n", "container.options.env[0]"),
    ("passthrough:\n  prefixes: [GITHUB_]\n  secrets: ['!GITHUB_TOKEN']\n", "passthrough.secrets[0]"),
    ("images:\n  context: \"~\"\n  file: Dockerfile\n", "images.context"),
    ("images:\n  file: ../../outside/Dockerfile\n", "images.file"),
    ("images:\n  dir: /\n", "images.dir"),
    ("slurm:\n  allow_env_in_accounting: true\n", "slurm.allow_env_in_accounting"),
])
def test_untrusted_project_file_is_refused_naming_file_key_and_trust(project, text, key):
    problems = _refused(text, project)
    assert len(problems) == 1 and key in problems[0], problems
    assert ".primus.yaml:" in problems[0]  # file:line


def test_untrusted_file_may_list_names_options_public_values_and_env_references(project):
    (project / "recipes").mkdir()
    (project / ".primus.yaml").write_text(
        "secrets:\n  GH_TOKEN: env:GITHUB_TOKEN\n"
        "container:\n  options:\n    image: rocm/primus:v26.5\n    env: [HF_TOKEN, NCCL_DEBUG=INFO, MLFLOW_TRACKING_URI]\n"
        "    volume: [./data:/data]\n"
        "passthrough:\n  secrets: [MY_KEY]\n  prefixes: [MYPROJ_]\n"
        "trackers:\n  disable_mlflow: false\n  mlflow_experiment_name: x\n"
        f"images:\n  dir: {project / 'recipes'}\n  context: .\n"
        "slurm:\n  allow_env_in_accounting: false\n")
    config = load_config()
    assert [(f.kind, f.trusted) for f in config.loaded] == [("project", False)]


def test_trust_is_by_path_and_content_and_any_edit_needs_it_again(project):
    path = project / ".primus.yaml"
    text = "secrets:\n  HF_TOKEN: cmd:op read op://ml/hf\n"
    path.write_text(text)
    with pytest.raises(ConfigError):
        load_config()
    store = trust.record([(path, trust.digest(text.encode()))])
    assert load_config().loaded[0].trusted
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    doc = json.loads(store.read_text())
    assert doc["files"][os.path.realpath(path)]["sha256"] == trust.digest(text.encode())
    assert not [p for p in store.parent.iterdir() if p.name.startswith(".trusted-")]  # no temporary left behind
    path.write_text(text + "# an innocent-looking edit\n")
    assert trust.status(path, trust.digest(path.read_bytes())) == "changed"
    with pytest.raises(ConfigError):
        load_config()
    trust.record([(path, trust.digest(path.read_bytes()))], revoke=True)
    assert trust.status(path, trust.digest(path.read_bytes())) == "untrusted"


@pytest.mark.parametrize("value,expected", [("1", True), ("true", True), ("0", False), ("", False)])
def test_trust_project_switch(project, monkeypatch, value, expected):
    (project / ".primus.yaml").write_text("secrets:\n  HF_TOKEN: pass:ml/hf\n")
    monkeypatch.setenv("PRIMUS_RUNNER_TRUST_PROJECT", value)
    if expected:
        assert load_config().loaded[0].trusted
    else:
        with pytest.raises(ConfigError):
            load_config()
    monkeypatch.delenv("PRIMUS_RUNNER_TRUST_PROJECT")
    assert load_config(trust_project=True).loaded[0].trusted  # --trust-project


def test_users_own_files_are_always_trusted(project, tmp_path, monkeypatch):
    text = "secrets:\n  HF_TOKEN: pass:ml/hf\nslurm:\n  allow_env_in_accounting: true\n"
    (tmp_path / "home" / ".primus.yaml").write_text(text)
    (tmp_path / "mine.yaml").write_text(text)
    assert [f.kind for f in load_config(str(tmp_path / "mine.yaml")).loaded] == ["user", "config"]
    monkeypatch.setenv("PRIMUS_RUNNER_CONFIG", str(tmp_path / "mine.yaml"))
    assert load_config().get("slurm", "allow_env_in_accounting") is True


def test_untrusted_dotenv_may_hold_values_but_not_endpoints(project):
    from runner.config.envfile import load_env_file

    (project / ".env").write_text("HF_TOKEN=hf_canary_value_0123456789\nNCCL_DEBUG=INFO\n")
    assert load_env_file(None).values["NCCL_DEBUG"] == "INFO"
    (project / ".env").write_text("NCCL_DEBUG=INFO\nWANDB_BASE_URL=http://127.0.0.1:9\n")
    with pytest.raises(ConfigError) as err:
        load_env_file(None)
    assert "WANDB_BASE_URL" in str(err.value.problems[0]) and ".env:2" in err.value.problems[0].where
    assert load_env_file(None, trust_project=True).values["WANDB_BASE_URL"]
    assert load_env_file(str(project / ".env")).values["WANDB_BASE_URL"]  # --env-file: the user's
