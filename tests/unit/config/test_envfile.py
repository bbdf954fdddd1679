"""The env file: read (never exported), its bad lines named by number never by text, the environment first."""

from __future__ import annotations

import os

import pytest

from runner.config.envfile import EnvFile, env_lookup, load_env_file
from runner.errors import ConfigError
from secret_ref_helpers import canary


def test_the_environment_wins_even_when_set_empty_then_the_env_file():
    lookup = env_lookup(EnvFile("x", {"A": "file", "B": "file"}), {"A": "", "C": "env"})
    assert (lookup("A"), lookup("B"), lookup("C"), lookup("D")) == ("", "file", "env", None)


def test_values_are_read_and_os_environ_is_untouched(work):
    value = canary("env")
    (work / "job.env").write_text(f"export HF_TOKEN={value}\nLR='0.1'\n# a comment\n\nQUOTED=\"a b\"\n")
    (work / "job.env").chmod(0o600)
    env_file = load_env_file(str(work / "job.env"))
    assert env_file.values == {"HF_TOKEN": value, "LR": "0.1", "QUOTED": "a b"}
    assert env_file.path == str(work / "job.env") and env_file.trusted and env_file.warnings == ()
    assert "HF_TOKEN" not in os.environ or os.environ["HF_TOKEN"] != value


def test_bad_lines_are_named_by_number_and_never_shown(work):
    value = canary("env")
    (work / "job.env").write_text(f"A=1\n{value}\nB=2\n1BAD=x\n")
    with pytest.raises(ConfigError) as info:
        load_env_file(str(work / "job.env"))
    assert "env file lines 2, 4: not NAME=value" in info.value.message and f"{work / 'job.env'}:2" in info.value.message
    assert value not in f"{info.value.message} {info.value.hint}"


def test_a_name_set_twice_warns_and_the_last_value_wins(work):
    (work / "job.env").write_text("A=1\nB=2\nA=3\n")
    (work / "job.env").chmod(0o600)
    env_file = load_env_file(str(work / "job.env"))
    assert env_file.values["A"] == "3"
    assert env_file.warnings == (f"{work / 'job.env'}:3: A is set again (first at line 1); the last value wins",)


def test_a_file_others_can_read_warns(work):
    (work / "job.env").write_text("A=1\n")
    (work / "job.env").chmod(0o644)
    assert any("chmod 600" in w for w in load_env_file(str(work / "job.env")).warnings)


def test_no_dot_env_or_devnull_is_no_env_file_and_a_missing_env_file_flag_is_an_error(work):
    assert load_env_file(None) == EnvFile(None)
    (work / ".env").write_text("A=1\n")
    assert load_env_file(os.devnull) == EnvFile(None)  # compose's way to read none, not even ./.env
    with pytest.raises(ConfigError, match="does not exist"):
        load_env_file(str(work / "missing.env"))
