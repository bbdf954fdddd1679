"""One exception type per kind of failure; the CLI maps each to its exit code.

Exit codes are the contract's: 0 ok, 1 engine/dependency unavailable, 2 invalid
usage/config/policy (nothing launched), 3 run-time failure, 4 leak found.
"""

from __future__ import annotations

from typing import NamedTuple


class Problem(NamedTuple):
    """One thing wrong with the input; ``where`` is ``file:line`` when known."""

    message: str
    where: str | None = None
    hint: str | None = None

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        return f"{text} ({self.hint})" if self.hint else text


class RunnerError(Exception):
    exit_code = 3

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(RunnerError):
    """Bad command line: nothing was launched."""

    exit_code = 2


class ConfigError(RunnerError):
    """Config, policy or missing-secret problems: every one found, at once."""

    exit_code = 2

    def __init__(self, problems: list[Problem] | Problem, hint: str | None = None):
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        lines = [str(p) for p in self.problems]
        message = lines[0] if len(lines) == 1 else f"{len(lines)} problems:\n  " + "\n  ".join(lines)
        super().__init__(message, hint)


class CredentialRefused(RunnerError):
    """A server refused a credential the runner sent (a tracker's token): nothing was launched.
    Exit 2, like a registry's refused login: the user's credential is what to fix."""

    exit_code = 2


class EngineUnavailable(RunnerError):
    """Docker daemon, Slurm or a required client library is not reachable."""

    exit_code = 1


class RuntimeFailure(RunnerError):
    """The runner failed at run time (build failed, container not created, sbatch refused)."""

    exit_code = 3


class LeakFound(RunnerError):
    """``audit`` found a secret value where it must never be."""

    exit_code = 4


class Interrupted(RunnerError):
    """SIGINT/SIGTERM reached the runner; what it started is cleaned up. Exit 130/143.

    ``warning``: the user's own Ctrl-C, said as a warning with what became of the job."""

    def __init__(self, exit_code: int, message: str, *, warning: bool = False):
        super().__init__(message)
        self.exit_code = exit_code
        self.warning = warning
