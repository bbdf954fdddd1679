"""No secret value on a program's command line (world-readable): refused by position, the value never shown."""

from __future__ import annotations

import pytest

from runner.errors import ConfigError
from runner.secrets import secret_scope
from runner.secrets.argv import refuse_secret_argv
from secret_ref_helpers import canary


def test_an_argument_holding_a_secret_is_refused_by_position_never_by_value():
    value = canary("argv")
    masker = secret_scope(extra=[("HF_TOKEN", value)]).masker
    with pytest.raises(ConfigError) as info:
        refuse_secret_argv(["tool", "--ok", f"--token={value}", value], masker, "git")
    text = f"{info.value.message}\n{info.value.hint}"
    assert "command line of git" in text and "argument 2, 3" in text
    assert value not in text


def test_arguments_without_secrets_or_no_masker_pass():
    masker = secret_scope(extra=[("HF_TOKEN", canary("argv"))]).masker
    refuse_secret_argv(["tool", "--lr", "0.1"], masker, "git")
    refuse_secret_argv(["tool", canary("argv")], None, "git")
