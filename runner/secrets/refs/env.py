"""``env:NAME``: another variable of the environment or the env file."""

from __future__ import annotations

from runner.secrets import Secret
from runner.secrets.names import NAME_RE
from runner.secrets.refs.failures import Missing

FORM = "env:NAME"


def target_problem(target: str) -> str | None:
    return None if NAME_RE.match(target) else f"'{target}' is not a variable name"


def fetch(ref, lookup, timeout: float) -> str:
    value = lookup(ref.target)
    if isinstance(value, Secret):
        value = value.reveal()
    if not value:
        raise Missing(f"{ref.target} is not set in the environment or the env file")
    return value
