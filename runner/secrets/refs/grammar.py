"""The grammar of ``secrets:``: ``NAME: scheme:target``, one ``SecretRef`` per entry, a
``Problem`` (with file:line) for each one that is not. The schemes are the registered
stores (``STORES``); each store checks its own target (``target_problem``)."""

from __future__ import annotations

from dataclasses import dataclass

from runner.errors import Problem
from runner.secrets.names import NAME_RE, is_runner_variable, shown_key
from runner.secrets.refs import STORES, store


@dataclass(frozen=True)
class SecretRef:
    """One entry of ``secrets:``. ``source`` is the reference as written: it says
    where the value lives, so it is safe to print."""

    name: str  # the variable it defines, e.g. HF_TOKEN
    source: str  # "pass:ml/hf"
    scheme: str  # a key of STORES
    target: str  # what follows "scheme:"
    where: str | None = None  # file:line of the entry

    def __str__(self) -> str:
        return f"{self.name} ({self.source})"


def parse_refs(config) -> tuple[list[SecretRef], list[Problem]]:
    """The references of the top-level ``secrets:`` mapping of a ``runner.config.Config``,
    and a Problem (with file:line) for each invalid name or reference."""
    section = config.get("secrets")
    if section is None:
        return [], []
    if not isinstance(section, dict):
        return [], [
            Problem(
                "secrets: expected a mapping of NAME: reference",
                where=config.where(("secrets",)),
                hint="e.g. HF_TOKEN: pass:ml/hf",
            )
        ]
    refs: list[SecretRef] = []
    problems: list[Problem] = []
    denied = {str(n) for n in config.get("passthrough", "deny", default=[]) or []}
    for name, source in section.items():
        ref = parse_ref(name, source, config.where(("secrets", name)))
        if isinstance(ref, Problem):
            problems.append(ref)
        elif ref.scheme == "env" and (ref.target in denied or is_runner_variable(ref.target)):
            problems.append(Problem(  # a rename must not carry a denied variable into the job under another name
                f"secrets.{name}: env:{ref.target} names a variable that is never forwarded (passthrough.deny, "
                f"or one that configures the runner)", where=ref.where,
                hint=f"remove the reference, or take {ref.target} off passthrough.deny in your own config"))
        else:
            refs.append(ref)
    return refs, problems


def parse_ref(name, source, where: str | None = None) -> SecretRef | Problem:
    """One entry: a SecretRef, or the Problem with it.

    A value that is not a reference is never echoed: it may be the secret itself,
    pasted where its reference belongs.
    """
    if not isinstance(name, str) or not NAME_RE.match(name):
        return Problem(
            f"secrets: '{shown_key(name)}' is not a variable name",
            where=where,
            hint="letters, digits and _, not starting with a digit",
        )
    scheme, sep, target = source.partition(":") if isinstance(source, str) else ("", "", "")
    if not sep or scheme not in STORES:
        return Problem(
            f"secrets.{shown_key(name)}: not a secret reference (the value is not shown)",
            where=where,
            hint=f"write where the secret lives: {expected_forms()}",
        )
    if "\n" in target or "\0" in target:
        bad = "a reference is one line"
    elif not target.strip():
        bad = f"nothing after '{scheme}:'"
    else:
        bad = store(scheme).target_problem(target)
    if bad:
        return Problem(f"secrets.{shown_key(name)}: {source}: {bad}", where=where, hint=f"expected {expected_forms()}")
    return SecretRef(name=name, source=source, scheme=scheme, target=target, where=where)


def expected_forms() -> str:
    """Every registered store's form, for a hint: "env:NAME, file:/path, ... or cmd:program args"."""
    forms = [store(scheme).FORM for scheme in STORES]
    return ", ".join(forms[:-1]) + " or " + forms[-1]
