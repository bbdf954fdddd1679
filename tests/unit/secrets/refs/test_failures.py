"""How a store says it could not give a value (runner.secrets.refs.failures): ``Missing`` (exit 2)
and ``Unreachable`` (exit 1, a kind of ``Missing``). What a store's program printed travels beside
the message, never in it: a failure's text, repr and traceback carry the message only, so a value
a program wrote to its stderr cannot reach a report unmasked."""

from __future__ import annotations

import traceback

import pytest

from engine_fixtures import assert_no_leak
from runner.errors import ConfigError, EngineUnavailable
from runner.secrets.refs.resolve import resolve
from secret_ref_helpers import canary, no_env, ref, script
from runner.secrets.refs.failures import Missing, Unreachable


@pytest.mark.parametrize("kind", [Missing, Unreachable])
def test_a_failure_shows_its_message_only_never_what_the_store_printed(kind):
    value = canary("stderr")
    try:
        raise kind("exited with 1", stderr=f"token={value}\n".encode(), foreign=f"AWS says {value}", hint="log in")
    except Missing as caught:  # an Unreachable is caught as a Missing: a store raises either, resolve tells them apart
        failure = caught
        shown = "".join(traceback.format_exception(caught))
    assert (failure.message, failure.hint) == ("exited with 1", "log in")
    assert failure.stderr == f"token={value}\n".encode() and failure.foreign == f"AWS says {value}"  # kept for masking
    assert str(failure) == "exited with 1" and failure.args == ("exited with 1",)
    assert_no_leak(str(failure) + repr(failure) + shown, [value], f"a {kind.__name__}'s text")


def test_a_failure_without_detail_has_empty_output_and_no_hint():
    failure = Unreachable("no answer within 1 s")
    assert isinstance(failure, Missing)
    assert (failure.stderr, failure.foreign, failure.hint) == (b"", "", None)
    assert not isinstance(Missing("x"), Unreachable)


def test_a_missing_entry_is_exit_2_and_an_unreachable_store_exit_1(tmp_path):
    failing = script(tmp_path / "failing", "exit 3\n")
    with pytest.raises(ConfigError) as missing:  # the program answered: no value (a retry cannot help)
        resolve([ref("A_TOKEN", f"cmd:{failing}")], no_env, timeout=5)
    assert missing.value.exit_code == 2 and "exited with 3" in str(missing.value)
    with pytest.raises(EngineUnavailable) as unreachable:  # no program to ask: the store is not there
        resolve([ref("A_TOKEN", f"cmd:{tmp_path / 'not-installed'}")], no_env, timeout=5)
    assert unreachable.value.exit_code == 1 and "not reachable" in str(unreachable.value)
