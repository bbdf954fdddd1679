"""Tracker overrides as Primus reads them back: each value arrives with the configured value and type.

Primus parses the arguments after ``train pretrain --config FILE`` with
``parse_cli_overrides(tokens, type_mode="legacy")``: ``true``/``false`` (any case)
become booleans, every other value goes through Python ``eval()`` and the result is
used when that succeeds, the raw text otherwise. So ``wandb_project: "2024"`` sent
as ``2024`` arrives as the integer 2024, and a run name with quotes or Python
syntax changes meaning. Here every value is written as the Python literal that
evaluates to exactly the configured value (strings quoted), in the one-token
``--key=value`` form, so a value starting with ``-`` is never taken for a flag.

Whether overrides are appended at all is ``trackers.overrides``: ``auto`` (only to
a Primus training command, ``… train pretrain|posttrain …``), ``always`` or ``never``.
"""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

MODES = ("auto", "always", "never")
_TRAIN = re.compile(r"^(pre|post)train$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")


class NotRepresentable(ValueError):
    """A configured value Primus's parser cannot yield (a date, a set, an object)."""


def is_primus_training(command: Sequence[str]) -> bool:
    """``… train pretrain|posttrain …`` (``primus-cli``, ``primus-cli-direct.sh``, ``primus/cli/main.py``)."""
    return any(a == "train" and i + 1 < len(command) and _TRAIN.match(command[i + 1]) for i, a in enumerate(command))


def wanted(mode: str | None, command: Sequence[str]) -> bool:
    """Whether overrides go onto ``command`` (``trackers.overrides``; default ``auto``)."""
    mode = mode or "auto"
    if mode == "always":
        return True
    if mode == "never":
        return False
    return is_primus_training(command)


def literal(value: Any) -> str:
    """The text that Primus's legacy typing turns back into ``value``, type included."""
    if isinstance(value, bool):  # Primus matches true/false (any case) before eval
        return "true" if value else "false"
    return _python(value)


def _python(value: Any) -> str:
    """A Python literal that ``eval`` with empty globals turns into ``value``."""
    if isinstance(value, bool):  # inside a list or mapping the whole value goes through eval
        return "True" if value else "False"
    if value is None:
        return "None"
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "(1e999-1e999)"  # NaN without a name (eval has none)
        if math.isinf(value):
            return "1e999" if value > 0 else "-1e999"
        return repr(value)
    if isinstance(value, str):
        return repr(value)  # always quoted: '2024' stays a str, llama3 no longer relies on a NameError
    if isinstance(value, list):
        return "[" + ", ".join(_python(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_python(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_python(k)}: {_python(v)}" for k, v in value.items()) + "}"
    raise NotRepresentable(
        f"a {type(value).__name__} value cannot be passed to Primus as an override; quote it in the YAML to pass it as text"
    )


def render(key: str, value: Any) -> list[str]:
    """One override as the tokens to append: ``["--key=<literal>"]`` (one token, so a value
    that starts with ``-`` is never read as the next flag)."""
    if not _KEY.match(key):
        raise NotRepresentable(f"override key {key!r} is not a name (letters, digits, _ and dots)")
    return [f"--{key}={literal(value)}"]
