"""One exception per kind of failure, each with the contract's exit code; problems listed all at once."""

from __future__ import annotations

import pytest

from runner.errors import (
    ConfigError, CredentialRefused, EngineUnavailable, Interrupted, LeakFound, Problem, RunnerError, RuntimeFailure, UsageError,
)


@pytest.mark.parametrize("kind, code", [(EngineUnavailable, 1), (UsageError, 2), (CredentialRefused, 2),
                                        (RuntimeFailure, 3), (RunnerError, 3), (LeakFound, 4)])
def test_each_kind_has_the_contracts_exit_code(kind, code):
    error = kind("it failed", "do this")
    assert (error.exit_code, error.message, error.hint, str(error)) == (code, "it failed", "do this", "it failed")


def test_interrupted_carries_the_signals_exit_code():
    assert Interrupted(130, "interrupted").exit_code == 130 and Interrupted(143, "terminated").exit_code == 143


def test_a_problem_reads_where_message_and_fix():
    assert str(Problem("bad key")) == "bad key"
    assert str(Problem("bad key", where="cfg.yaml:3")) == "cfg.yaml:3: bad key"
    assert str(Problem("bad key", where="cfg.yaml:3", hint="remove it")) == "cfg.yaml:3: bad key (remove it)"


def test_a_config_error_is_exit_2_and_lists_every_problem():
    one = ConfigError(Problem("a", where="f:1"))
    assert (one.exit_code, one.message, one.problems) == (2, "f:1: a", [Problem("a", where="f:1")])
    many = ConfigError([Problem("a", where="f:1"), Problem("b", hint="fix b")], hint="see the docs")
    assert many.message == "2 problems:\n  f:1: a\n  b (fix b)" and many.hint == "see the docs"
