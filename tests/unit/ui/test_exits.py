"""How a command ends: each exception said once, masked, and its contract exit code; the CLI and
the Slurm node agent end through the same mapping."""

from __future__ import annotations

import pytest

from runner.errors import ConfigError, EngineUnavailable, Interrupted, LeakFound, Problem, RuntimeFailure, UsageError
from runner.secrets import Secret, secret_scope
from runner.ui import Output
from runner.ui.exits import interrupt_ends_follow, interrupt_means, run_guarded

CANARY = "exit-codes-canary-7f3a9c"


def _out() -> Output:
    return Output(color=False, masker=secret_scope(extra=[("TOKEN", Secret(CANARY))]).masker)


def _raise(exc: BaseException):
    def body():
        raise exc
    return body


@pytest.mark.parametrize("exc, code", [
    (UsageError("bad flag", "use --good"), 2), (ConfigError(Problem("bad key", "f.yaml:3")), 2), (EngineUnavailable("no daemon"), 1),
    (RuntimeFailure("create failed"), 3), (LeakFound("leak"), 4), (Interrupted(143, "terminated"), 143),
])
def test_a_runner_error_is_one_masked_message_and_its_own_code(exc, code, capsys):
    exc.message = f"{exc.message} {CANARY}"
    assert run_guarded(_raise(exc), _out()) == code
    err = capsys.readouterr().err
    assert err.startswith("error: ") and CANARY not in err and "Traceback" not in err


def test_ctrl_c_is_130_and_says_interrupted(capsys):
    assert run_guarded(_raise(KeyboardInterrupt()), _out()) == 130
    assert capsys.readouterr().err == "error: interrupted\n"


def test_a_closed_pipe_ends_quietly_with_0(capsys):
    assert run_guarded(_raise(BrokenPipeError()), _out()) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("verbose", [False, True])
def test_a_bug_is_3_with_its_traceback_only_when_verbose_and_masked(verbose, capsys):
    assert run_guarded(_raise(ValueError(f"oops {CANARY}")), _out(), verbose=verbose, bug_hint="report it") == 3
    err = capsys.readouterr().err
    assert "error: internal error: ValueError: oops ***" in err and "fix: report it" in err and CANARY not in err
    assert ("Traceback (most recent call last)" in err) is verbose


def test_what_the_body_returns_is_the_code():
    assert run_guarded(lambda: 7, _out()) == 7 and run_guarded(lambda: None, _out()) == 0


def test_the_node_agent_ends_through_the_same_mapping(capsys):
    """``node-agent`` with arguments it was not written for: the usage error's code and message, as the CLI says it."""
    from runner.engines.slurm import agent

    assert agent.main(["node-agent", "--bogus", "x", "y"]) == 2
    assert capsys.readouterr().err.startswith("error: node-agent: unexpected arguments --bogus x y")


def test_with_bugs_off_only_an_interrupt_is_mapped(capsys):
    """The CLI's start-up (imports, parsing): Ctrl-C is 130, a bug keeps its traceback (no --verbose is known yet)."""
    assert run_guarded(_raise(KeyboardInterrupt()), _out(), bugs=False) == 130
    assert capsys.readouterr().err == "error: interrupted\n"
    with pytest.raises(ValueError):
        run_guarded(_raise(ValueError("a bug")), _out(), bugs=False)


def test_interrupt_means_is_130_with_its_message_as_a_warning_after_the_blocks_cleanup(capsys):
    cleaned = []

    def body():
        with interrupt_means(f"stopped following job 7; it keeps running {CANARY}"):
            try:
                raise KeyboardInterrupt
            finally:
                cleaned.append(True)

    assert run_guarded(body, _out()) == 130 and cleaned == [True]
    assert capsys.readouterr().err == "warning: stopped following job 7; it keeps running ***\n"


def test_interrupt_ends_follow_ends_quietly_and_lets_everything_else_through(capsys):
    with interrupt_ends_follow():
        raise KeyboardInterrupt
    with pytest.raises(OSError), interrupt_ends_follow():
        raise OSError("not an interrupt")
    assert capsys.readouterr().err == ""
