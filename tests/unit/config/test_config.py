"""Config layers: the launcher file loads unchanged, layers deep-merge, errors point at file:line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.config import load_config
from runner.errors import ConfigError

# The Primus launcher's own file, kept verbatim in tests/fixtures/ (checked against
# the shared copy beside the repository when that is present).
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "primus-runner.primus.yaml"
SHARED_FIXTURE = Path(__file__).resolve().parents[4] / "shared" / "fixtures" / "primus-runner.primus.yaml"


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A working directory and HOME with no config files, and a private validation cache."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(work)
    return work


def _fixture_env_names() -> list[str]:
    names = []
    for line in FIXTURE.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith('- "') and stripped.endswith('"') and "/" not in stripped:
            name = stripped[3:-1]
            if name.isupper() and name not in names and name not in ("SYS_PTRACE", "CAP_SYS_ADMIN"):
                names.append(name)
    return names


def test_fixture_is_the_launcher_file_verbatim():
    if not SHARED_FIXTURE.exists():
        pytest.skip("no shared/ beside the repository: nothing to compare with")
    assert FIXTURE.read_bytes() == SHARED_FIXTURE.read_bytes()


def test_launcher_file_loads_unchanged_with_same_names(isolated):
    (isolated / ".primus.yaml").write_text(FIXTURE.read_text())
    config = load_config()
    env = config.get("container", "options", "env")
    expected = _fixture_env_names()
    assert len(expected) == 40  # 41 entries, HSA_KERNARG_POOL_SIZE twice
    assert set(env) == set(expected)  # the built-in defaults are a subset of the launcher's list
    assert len(env) == len(set(env)) == 40
    assert config.get("container", "options", "device") == ["/dev/kfd", "/dev/dri", "/dev/infiniband"]
    assert config.get("container", "options", "cap-add") == ["SYS_PTRACE", "CAP_SYS_ADMIN"]
    assert config.get("slurm", "gpus_per_node") == 8
    assert config.get("direct", "master_port") == 1234
    assert config.get("container", "options", "privileged") == "true"


def test_user_layer_with_only_image_keeps_defaults(isolated, tmp_path):
    (isolated / ".primus.yaml").write_text(FIXTURE.read_text())
    user = isolated / "user.yaml"
    user.write_text("container:\n  options:\n    image: my/image:1\n")
    config = load_config(str(user))
    assert config.get("container", "options", "image") == "my/image:1"
    assert config.get("container", "options", "device") == ["/dev/kfd", "/dev/dri", "/dev/infiniband"]
    assert config.get("container", "options", "cap-add") == ["SYS_PTRACE", "CAP_SYS_ADMIN"]
    assert "HF_TOKEN" in config.get("container", "options", "env")
    assert len(config.get("container", "options", "env")) == 40


def test_precedence_project_over_home_and_extra_over_project(isolated):
    Path(os.environ["HOME"], ".primus.yaml").write_text("container:\n  options:\n    image: home\n    ipc: private\n")
    (isolated / ".primus.yaml").write_text("container:\n  options:\n    image: project\n")
    extra = isolated / "extra.yaml"
    extra.write_text("container:\n  options:\n    image: extra\n    env: [EXTRA_NAME]\n")
    config = load_config(str(extra), {"container": {"options": {"shm-size": "8g"}}})
    assert config.get("container", "options", "image") == "extra"
    assert config.get("container", "options", "ipc") == "private"
    assert config.get("container", "options", "shm-size") == "8g"
    assert "EXTRA_NAME" in config.get("container", "options", "env")
    assert "MASTER_ADDR" in config.get("container", "options", "env")
    assert config.where(("container", "options", "image")) == f"{extra}:3"


def test_unknown_key_names_file_line_and_suggests(isolated):
    (isolated / ".primus.yaml").write_text("container:\n  options:\n    devices: [/dev/kfd]\n")
    with pytest.raises(ConfigError) as err:
        load_config()
    (problem,) = err.value.problems
    assert problem.where == f"{isolated / '.primus.yaml'}:3"
    assert "devices" in problem.message and "did you mean 'device'" in problem.hint


@pytest.mark.parametrize(
    "yaml_text, line, words",
    [
        ("container:\n  options:\n    cpus: abc\n", 3, ["cpus", "a string"]),
        ("container:\n  options:\n    privileged: maybe\n", 3, ["privileged"]),
        ("slurm:\n  nodes: two\n", 2, ["nodes", "integer"]),
        ("trackers:\n  framework: jax\n", 2, ["framework", "megatron"]),
    ],
)
def test_wrong_types_are_reported_with_line(isolated, yaml_text, line, words):
    (isolated / ".primus.yaml").write_text(yaml_text)
    with pytest.raises(ConfigError) as err:
        load_config()
    (problem,) = err.value.problems
    assert problem.where.endswith(f":{line}")
    for word in words:
        assert word in problem.message
    for value in ("abc", "maybe", "two", "jax"):  # the type is named, never a value from the file
        assert value not in problem.message


def test_every_problem_of_every_layer_at_once(isolated):
    (isolated / ".primus.yaml").write_text("slurm:\n  nodez: 1\ntrackers:\n  disable_wandb: 'no'\n")
    extra = isolated / "x.yaml"
    extra.write_text("main:\n  debugg: true\n")
    with pytest.raises(ConfigError) as err:
        load_config(str(extra))
    assert len(err.value.problems) == 3


def test_malformed_yaml_points_at_line(isolated):
    (isolated / ".primus.yaml").write_text("container:\n  options:\n    image: [unclosed\n  x: 1\n")
    with pytest.raises(ConfigError) as err:
        load_config()
    assert "malformed YAML" in err.value.message
    assert err.value.problems[0].where.startswith(str(isolated / ".primus.yaml") + ":")


def test_missing_extra_config_is_a_config_error(isolated):
    with pytest.raises(ConfigError) as err:
        load_config("nope.yaml")
    assert "does not exist" in err.value.message


def test_scalars_typed_as_written(isolated):
    (isolated / ".primus.yaml").write_text("container:\n  options:\n    cpus: 1\n    privileged: false\n")
    config = load_config()
    assert config.get("container", "options", "cpus") == 1
    assert config.get("container", "options", "privileged") is False
