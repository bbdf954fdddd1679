"""What the stores that run a program share: ``runner.subprocesses.run`` with its failures
told as a store's (a program not installed or not answering: ``Unreachable``), and the
first line of its output as the value."""

from __future__ import annotations

from runner import subprocesses
from runner.secrets.refs.failures import Missing, Unreachable


def output(argv: list[str], timeout: float, label: str) -> bytes:
    """The program's stdout; its (bounded) stderr reaches an error only masked."""
    try:
        done = subprocesses.run(argv, timeout=timeout, label=label)
    except (subprocesses.ProgramNotFound, subprocesses.ProgramTimedOut) as exc:
        raise Unreachable(exc.message, hint=exc.hint) from None
    except (subprocesses.CannotRun, subprocesses.OutputTooLarge) as exc:
        raise Missing(exc.message, hint=exc.hint) from None
    if done.returncode != 0:
        how = f"killed by signal {-done.returncode}" if done.returncode < 0 else f"exited with {done.returncode}"
        raise Missing(f"{label} {how}", stderr=done.stderr)
    return done.stdout


def first_line(stdout: bytes) -> str:
    if not stdout.strip():
        raise Missing("printed nothing on its standard output")
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise Missing("its output is not UTF-8 text") from None
    line = text.split("\n", 1)[0]
    return line[:-1] if line.endswith("\r") else line
