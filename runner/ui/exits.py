"""How a command ends: each failure said once (masked) and turned into the contract's exit code.

The one place exceptions become exit codes, for the CLI and the Slurm node agent alike:
a ``RunnerError`` its own code (2 usage/config, 1 engine unavailable, 3 run-time failure,
4 leak found, 130/143 interrupted); Ctrl-C (``KeyboardInterrupt``) 130; a closed pipe 0;
anything else is a bug, 3, with its traceback (masked) only when ``verbose``.

And the one place an interrupt is caught: a signal's code (``EXIT_SIGNAL``); a path that must
say what became of its job on Ctrl-C raises ``Interrupted`` through ``interrupt_means``; a
follow (``logs -f``) ends on one through ``interrupt_ends_follow``. Cleanup is the paths' own
``finally``; nothing else catches ``KeyboardInterrupt`` (``tests/unit/test_architecture.py``).
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    from runner.ui import Output

INTERRUPTED = 130  # 128 + SIGINT
EXIT_SIGNAL = {signal.SIGINT: INTERRUPTED, signal.SIGTERM: 143}  # the first signal a launch gets decides its code


def run_guarded(body: Callable[[], int | None], out: "Output", *, verbose: bool = False,
                bug_hint: str = "rerun with --verbose and report it", bugs: bool = True) -> int:
    """``body()``'s exit code (None is 0), or the code of what it raised, after saying it on ``out``.
    With ``bugs=False`` only an interrupt is mapped; anything else goes on up, traceback and all."""
    try:
        return body() or 0
    except KeyboardInterrupt as exc:
        return exit_code(exc, out)
    except Exception as exc:
        if not bugs:
            raise
        return exit_code(exc, out, verbose=verbose, bug_hint=bug_hint)


def exit_code(exc: BaseException, out: "Output", *, verbose: bool = False,
              bug_hint: str = "rerun with --verbose and report it") -> int:
    """Say ``exc`` on ``out`` (one masked line and its fix) and return its exit code."""
    from runner.errors import ConfigError, Interrupted, RunnerError

    if isinstance(exc, Interrupted) and exc.warning:  # the user's Ctrl-C, and what it left running
        out.warn(exc.message)
        return exc.exit_code
    if isinstance(exc, RunnerError):
        from runner.ui import ci

        if isinstance(exc, ConfigError) and ci.report_problems(exc.problems, out.masker):
            if exc.hint:  # each problem is an ::error file=…,line=…:: annotation
                out.info(f"  fix: {exc.hint}")
        else:
            out.error(exc.message, exc.hint)
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        out.error("interrupted")
        return INTERRUPTED
    if isinstance(exc, BrokenPipeError):
        return 0  # the reader went away (`… | head`): nothing more to say
    if verbose:
        import traceback

        out.info("".join(traceback.format_exception(exc)))
    out.error(f"internal error: {type(exc).__name__}: {exc}", bug_hint)
    return 3


@contextmanager
def interrupt_means(message: str) -> Iterator[None]:
    """Ctrl-C in the block ends it as ``Interrupted`` (130, a warning saying ``message``: what
    became of the job); the block's own ``finally`` has cleaned up by then."""
    from runner.errors import Interrupted

    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(INTERRUPTED, message, warning=True) from None


@contextmanager
def interrupt_ends_follow() -> Iterator[None]:
    """Ctrl-C while following output (``logs -f``) ends the follow: the command's normal end,
    nothing said (what it followed goes on)."""
    try:
        yield
    except KeyboardInterrupt:
        pass
