"""``exec [-i] [-t] NAME [-i] [-t] [--] CMD…``: a command in a running job, as ``docker exec``.

The options come before NAME (docker's order: ``exec -it NAME bash``) or right after it, before
the command (``exec NAME -it -- bash``); everything from the first other word (or after ``--``)
is the command, with its own options. The engine's ``exec`` verb runs it with the job's
environment, secrets included (``runner.engines.docker.exec_into``).
"""

from __future__ import annotations

from runner.errors import UsageError
from runner.options import Selection, Sources
from runner.ui import Output

_FLAGS = {"-i": "i", "--interactive": "i", "-t": "t", "--tty": "t", "-it": "it", "-ti": "it"}
USAGE = "primus-runner exec [-i] [-t] NAME -- CMD ARGS…, e.g. primus-runner exec -it my-job bash"


def split_command(words: list[str]) -> tuple[set[str], list[str]]:
    """(the exec options given after NAME, the command): options until ``--`` or the first other word."""
    given: set[str] = set()
    for i, word in enumerate(words):
        if word == "--":
            return given, words[i + 1:]
        if word not in _FLAGS:
            return given, words[i:]
        given.update(_FLAGS[word])
    return given, []


def run(out: Output, *, name: str, words: list[str], sources: Sources, interactive: bool, tty: bool,
        all_users: bool = False, engine: str | None = None) -> int:
    from runner.engines import engine_for_verb, verb
    from runner.engines.docker.interactive import check_terminal_options

    given, command = split_command(words)
    interactive, tty = interactive or "i" in given, tty or "t" in given
    if not command:
        raise UsageError("no command given", USAGE)
    check_terminal_options(interactive, tty, detach=False, dry_run=False)
    selection = Selection(sources, (name,), all_users=all_users, command=tuple(command), engine=engine,
                          interactive=interactive, tty=tty)
    return verb(engine_for_verb("exec", engine), "exec")(selection, out)
