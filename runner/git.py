"""The one way the runner asks git anything: a query that runs nothing from the repository.

A cloned repository may commit a directory laid out as a repository of its own (a bare
layout: ``HEAD``, ``config``, ``objects/``), and git reads that directory's ``config``
when it is asked from inside it: ``core.fsmonitor`` runs a program on any command that
reads the index, ``log.showSignature`` with ``gpg.program`` runs one on ``git log``. So
every query refuses a repository git would find implicitly as bare, overrides the keys
that name a program (command-line settings win over every file), reads no system
config and never starts a pager. Provenance only: never a failure of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

from runner import subprocesses
from runner.errors import RunnerError

# Command-line settings outrank the repository's config; safe.bareRepository is honoured only there.
HARDENED = (
    "-c", "safe.bareRepository=explicit",
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "log.showSignature=false",
    "-c", "gpg.program=false",
    "-c", "core.pager=cat",
)


def git_argv(cwd: str | Path, *args: str) -> list[str]:
    return ["git", "--no-pager", "-C", str(cwd), *HARDENED, *args]


def git_env() -> dict[str, str]:
    return {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


def git(cwd: str | Path, *args: str) -> str | None:
    """``git ARGS`` run in ``cwd``: its stripped output ("" when it printed nothing), or None
    outside a repository, without git, or when it does not answer within 5 s."""
    try:
        result = subprocesses.run(git_argv(cwd, *args), timeout=5, env=git_env())
    except RunnerError:
        return None
    return result.stdout_text.strip() if result.returncode == 0 else None


def git_each(cwd: str | Path, *queries: tuple[str, ...]) -> list[str | None]:
    """``git`` for each query, side by side: each is a process of its own, so the caller waits for
    the slowest rather than for their sum. Answers in the queries' order."""
    import threading

    answers: list[str | None] = [None] * len(queries)

    def ask(index: int) -> None:
        answers[index] = git(cwd, *queries[index])

    others = [threading.Thread(target=ask, args=(index,), daemon=True) for index in range(1, len(queries))]
    for thread in others:
        thread.start()
    if queries:
        ask(0)
    for thread in others:
        thread.join()
    return answers


def is_tracked(path: Path) -> bool:
    """Is ``path`` in its repository's index (``git ls-files --error-unmatch``)?"""
    return git(path.parent, "ls-files", "--error-unmatch", "--", os.path.basename(path)) is not None
