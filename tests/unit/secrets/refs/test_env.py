"""``env:`` references (runner.secrets.refs.env): the other variable, exactly."""

from __future__ import annotations

import pytest

from engine_fixtures import sha
from runner.errors import ConfigError
from runner.secrets.refs.resolve import resolve
from runner.secrets import Secret
from secret_ref_helpers import canary, ref


def test_env_reference_reads_the_other_variable_exactly():
    value = canary("env") + " with spaces, ünïcode and = signs"
    lookup = {"GITHUB_TOKEN": value}.get
    got = resolve([ref("GH_TOKEN", "env:GITHUB_TOKEN")], lookup)
    assert set(got) == {"GH_TOKEN"} and isinstance(got["GH_TOKEN"], Secret)
    assert sha(got["GH_TOKEN"].reveal()) == sha(value)


def test_env_reference_accepts_a_lookup_that_returns_secrets():
    value = canary("env-secret")
    got = resolve([ref("A", "env:B")], {"B": Secret(value)}.get)
    assert got["A"].reveal() == value


def test_unset_or_empty_env_reference_is_exit_2_naming_the_reference():
    with pytest.raises(ConfigError) as info:
        resolve([ref("GH_TOKEN", "env:GITHUB_TOKEN"), ref("X", "env:EMPTY")], {"EMPTY": ""}.get)
    assert info.value.exit_code == 2
    assert len(info.value.problems) == 2
    assert "GH_TOKEN (env:GITHUB_TOKEN)" in info.value.message and "X (env:EMPTY)" in info.value.message
