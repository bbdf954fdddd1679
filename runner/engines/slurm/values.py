"""The one check of a Slurm value (``--nodes``, ``--time``, ``--partition``, ``--account``,
``--gpus-per-node`` and the cluster options), whoever gives it: ``submit``'s flags, the
launcher's ``slurm`` flags or a config file's ``slurm:`` key. Each problem names where the value
came from: the flag as it was spelled, or the file and line (``Problem.where``) — also for the
file ``PRIMUS_RUNNER_CONFIG`` names.

Each value must be ONE token of the characters Slurm's own syntax uses for that option: no
whitespace, newline, quote or '#' (a new directive), no leading '-' (another option). So no
value can add a directive or widen ``--export``.
"""

from __future__ import annotations

import re

from runner.errors import ConfigError, Problem

_TOKEN = re.compile(r"^[A-Za-z0-9_.:+,=@/-]+$")
# Slurm's time limits: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or no limit.
_TIME = re.compile(r"^(\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2}|UNLIMITED|INFINITE|unlimited|infinite)$")
_NODES = r"[A-Za-z0-9_.\[\]-]+(,[A-Za-z0-9_.\[\]-]+)*"
_MAIL_TYPES = {"NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND", "STAGE_OUT", "TIME_LIMIT",
               "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS"}
_DEP = r"(singleton|[a-z_]+(:[0-9]+(_[0-9]+)?(\+[0-9]+)?)+)"
FLAG_RULES: dict[str, tuple[str, str]] = {
    "nodelist": (rf"^{_NODES}$", "node names or ranges, e.g. n[1-4],gpu7"),
    "exclude": (rf"^{_NODES}$", "node names or ranges, e.g. n3,n[7-8]"),
    "qos": (r"^[A-Za-z0-9_.-]+$", "a QOS name"),
    "reservation": (r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$", "reservation name(s), comma separated"),
    "gres": (r"^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*(,[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*)*$", "e.g. gpu:8 or gpu:mi300x:8,nic:1"),
    "constraint": (r"^[A-Za-z0-9_.:*&|!()\[\]-]+$", "features with & | [ ] ( ) *N, e.g. a100&ib"),
    "mem": (r"^[0-9]+[KMGT]?$", "a size such as 64G (0: all of the node's memory)"),
    "mail_user": (r"^[A-Za-z0-9_.+-]+(@[A-Za-z0-9.-]+)?$", "a user name or mail address"),
    "dependency": (rf"^{_DEP}([,?]{_DEP})*$", "e.g. afterok:1234 or afterany:12:34,singleton"),
    "signal": (r"^(R:|B:|RB:|BR:)?([A-Z0-9]+)(@[0-9]+)?$", "[R:|B:]SIG[@SECONDS], e.g. B:USR1@90"),
}
_ONE_VALUE = "one value in Slurm's own syntax; no spaces, quotes, '#' or options"


_COUNTS = {"nodes": (1, "node", "one number", "a job needs at least one node"),
           "gpus_per_node": (0, "GPU", "[TYPE:]N", "the count is negative"),
           "cpus_per_task": (1, "CPU", "one number", "at least 1")}


def count(value, typed: bool = False) -> int | None:
    """A count as Slurm takes it (``8``; ``typed``: also ``TYPE:8``, as ``--gpus-per-node``), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if typed:
        text = text.rsplit(":", 1)[-1]
    return int(text) if re.fullmatch(r"-?\d+", text) else None


def problem(key: str, value, flag: str | None = None, where: str | None = None, config_key: str | None = None) -> Problem | None:
    """The problem with one value, or None. ``flag``: the flag that gave it, as spelled (``-N``,
    ``--nodes``); else ``where``: the config file and line, and the key as the file spells it
    (``config_key``, e.g. ``cpus-per-task``). The message names the flag, or the key (``where``
    then says file:line)."""
    if value is None:
        return None
    plain = str(value) if _TOKEN.match(str(value)) else repr(value)  # quoted when it holds spaces or quotes
    shown = f"{flag or 'slurm.' + (config_key or key)} {plain}"
    text = str(value)
    if key in _COUNTS:
        least, what, form, too_few = _COUNTS[key]
        n = count(value, typed=key == "gpus_per_node")
        if n is None:
            return Problem(f"{shown}: the runner needs a {what} count ({form})", where=where, hint=f"e.g. --{key.replace('_', '-')} 2")
        return Problem(f"{shown}: {too_few}", where=where) if n < least else None
    if key in ("partition", "time", "account"):
        if not (_TIME if key == "time" else _TOKEN).match(text):
            form = "a time limit such as 30, 4:00:00 or 2-00:00:00" if key == "time" else "one name in Slurm's own syntax"
            return Problem(f"{shown}: not {form}", where=where,
                           hint=f"e.g. --{key} {'4:00:00' if key == 'time' else 'NAME'}; no spaces, quotes or '#'")
        return None
    if key == "mail_type":
        if not all(kind in _MAIL_TYPES for kind in text.split(",")):
            return Problem(f"{shown}: not a comma list of {', '.join(sorted(_MAIL_TYPES))}", where=where)
        return None
    if key in FLAG_RULES:
        pattern, form = FLAG_RULES[key]
        if not isinstance(value, str) or not re.match(pattern, text) or text.startswith("-"):
            return Problem(f"{shown}: not {form}", where=where, hint=_ONE_VALUE)
    return None


def checked(key: str) -> bool:
    """Whether ``key`` (``cpus_per_task``, ``mem`` …) has a rule here."""
    return key in _COUNTS or key in FLAG_RULES or key in ("partition", "time", "account", "mail_type")


def problems(values: dict, flags: dict[str, str | None] | None = None, where=None) -> list[Problem]:
    """Every value's problem: ``values`` key → value; ``flags`` key → the flag that gave it (None:
    from the config); ``where(key)`` → the config's file:line for it."""
    flags = flags or {}
    found = []
    for key, value in values.items():
        flag = flags.get(key)
        issue = problem(key, value, flag, None if flag or where is None else where(key))
        if issue:
            found.append(issue)
    return found


# --------------------------------------------------------------------------- one line of text
# A control character (newline, carriage return, tab, escape, NUL, C1, the Unicode line separators)
# in the batch script would end a line and start another: a directive or a command of someone else's.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def control_problem(text: str, what: str, where: str | None = None) -> Problem | None:
    """The problem with text that goes into the batch script or onto a command line, or None."""
    bad = _CONTROL.search(text)
    if bad is None:
        return None
    return Problem(f"{what}: holds a control character (U+{ord(bad.group()):04X}); it would go into the batch script or sbatch's command line",
                   where=where, hint="one line of printable text: remove the newline (or tab, escape …) from the value")


class ScriptValue(str):
    """Text the batch script or a command line may hold: refused (``ConfigError``, exit 2) at
    construction when it holds a control character, naming ``what`` (the key or flag) and ``where``."""

    def __new__(cls, text, what: str, where: str | None = None):
        issue = control_problem(str(text), what, where)
        if issue:
            raise ConfigError(issue)
        return super().__new__(cls, str(text))


def script_text(lines: list[str]) -> str:
    """The batch script from its lines, each one a ``ScriptValue``: no value, whichever, can add a line."""
    return "\n".join(ScriptValue(line, f"the batch script's line {line.split('=', 1)[0][:40]!r}") for line in lines)
