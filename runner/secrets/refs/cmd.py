"""``cmd:program args``: the first stdout line of a program, split like a shell would but run
without one; its arguments come from the config text alone."""

from __future__ import annotations

import shlex

from runner.secrets.refs.programs import first_line, output

FORM = "cmd:program args"


def target_problem(target: str) -> str | None:
    try:
        return None if shlex.split(target) else "no program"
    except ValueError as exc:
        return f"cannot split the command line ({exc})"


def fetch(ref, lookup, timeout: float) -> str:
    argv = shlex.split(ref.target)
    return first_line(output(argv, timeout, argv[0]))
