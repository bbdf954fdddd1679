"""How a command ends: each failure said once (masked) and turned into the contract's exit code.

The one place exceptions become exit codes, for the CLI and the Slurm node agent alike:
a ``RunnerError`` its own code (2 usage/config, 1 engine unavailable, 3 run-time failure,
4 leak found, 130/143 interrupted); Ctrl-C (``KeyboardInterrupt``) 130; a closed pipe 0;
anything else is a bug, 3, with its traceback (masked) only when ``verbose``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from runner.ui import Output

INTERRUPTED = 130  # 128 + SIGINT


def run_guarded(body: Callable[[], int | None], out: "Output", *, verbose: bool = False,
                bug_hint: str = "rerun with --verbose and report it") -> int:
    """``body()``'s exit code (None is 0), or the code of what it raised, after saying it on ``out``."""
    try:
        return body() or 0
    except (Exception, KeyboardInterrupt) as exc:
        return exit_code(exc, out, verbose=verbose, bug_hint=bug_hint)


def exit_code(exc: BaseException, out: "Output", *, verbose: bool = False,
              bug_hint: str = "rerun with --verbose and report it") -> int:
    """Say ``exc`` on ``out`` (one masked line and its fix) and return its exit code."""
    from runner.errors import ConfigError, RunnerError

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
