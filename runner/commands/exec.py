"""``exec [-i] [-t] NAME [-i] [-t] [--] CMD…``: a command in a running job, as ``docker exec``.

The options come before NAME (docker's order: ``exec -it NAME bash``) or right after it, before
the command (``exec NAME -it -- bash``); everything from the first other word (or after ``--``)
is the command, with its own options. The job's secrets are found here, from its run's record
(``job_secrets``); the engine's ``exec`` verb hands them to the command as the job got them
(``runner.engines.docker.exec_into``).
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
    container, secrets = job_secrets(name, sources, out)
    selection = Selection(sources, (name,), all_users=all_users, command=tuple(command), engine=engine,
                          interactive=interactive, tty=tty, job_secrets=secrets, job_container=container)
    return verb(engine_for_verb("exec", engine), "exec")(selection, out)


def job_secrets(name: str, sources: Sources, out: Output) -> tuple[str | None, tuple]:
    """(the container of the running job ``name``, the secrets it was given): the names its run's record
    lists as forwarded secrets, resolved in the run's own scope (its directory's config and env file),
    each from the first source that has it, as the job's plan took it. (None, ()) with no such run."""
    from runner.runs.reading import run_scope, running_named

    record = running_named(name)
    if record is None:
        return None, ()
    names = {entry["name"] for entry in record.get("env") or [] if entry.get("secret")}
    found: dict = {}
    for secret_name, value in run_scope(record, sources, out).named:
        if secret_name in names:
            found.setdefault(secret_name, value)
    missing = sorted(names - set(found))
    if missing:
        out.warn(f"not in the run's scope now, not passed to the command: {', '.join(missing)}")
    return record["container_id"], tuple(found.items())
