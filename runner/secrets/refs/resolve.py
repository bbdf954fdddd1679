"""Resolving references: ``resolve`` fetches the values a command needs, once, in parallel,
each with a timeout, into ``Secret`` objects only: no value is written, cached, or put on a
command line. Every failure is reported at once, naming the reference (``pass:ml/hf``),
never a value; the caller then adds the values to the one secret scope
(``secret_scope(..., extra=...)``).

Exit codes: an entry that does not exist, a program that fails, a file that is missing
or readable by others -> ``ConfigError`` (2); a store that cannot be reached (timeout,
connection refused, client not installed) -> ``EngineUnavailable`` (1).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from runner import subprocesses
from runner.errors import ConfigError, EngineUnavailable, Problem
from runner.secrets import Secret, secret_scope
from runner.secrets.refs import store
from runner.secrets.refs.failures import Missing, Unreachable
from runner.secrets.refs.grammar import SecretRef

# How long past the per-reference timeout to wait for a worker to report its own
# timeout (and kill its program) before giving up on it.
_GRACE = 2.0
# How much of a failing program's (masked) stderr an error shows.
_STDERR_LINES = 5
_STDERR_CHARS = 500

Lookup = Callable[[str], "str | Secret | None"]
Mask = Callable[[str], str]


@dataclass
class _Outcome:
    value: Secret | None = None
    failure: Missing | None = None


def resolve(
    refs: Sequence[SecretRef],
    lookup: Lookup,
    *,
    timeout: float = 10.0,
    mask: Mask | None = None,
) -> dict[str, Secret]:
    """The value of each reference given, as ``{name: Secret}``.

    Every reference is fetched once, all in parallel, each within ``timeout`` seconds.
    ``lookup(NAME)`` answers ``env:NAME`` (the environment and env file). ``mask`` is the
    caller's masker (``scope.masker.mask``): a failing program's stderr is shown only
    after it, and after masking the values resolved here.

    Raises ``ConfigError`` (exit 2) listing every failing reference when any entry is
    missing or refused (a retry cannot help), else ``EngineUnavailable`` (exit 1)
    listing the stores that could not be reached.
    """
    outcomes = _resolve_all(refs, lookup, timeout)
    failed = [(ref, o.failure) for ref, o in zip(refs, outcomes) if o.failure is not None]
    if not failed:
        return {ref.name: o.value for ref, o in zip(refs, outcomes) if o.value is not None}
    masking = _masking(refs, outcomes, mask)
    definite = [(ref, f) for ref, f in failed if not isinstance(f, Unreachable)]
    if definite:
        problems = [
            Problem(f"secret {ref}: {_detail(f, masking, unreachable_note=True)}", where=ref.where, hint=f.hint)
            for ref, f in failed
        ]
        raise ConfigError(problems)
    lines = [f"{ref}: {_detail(f, masking)}" + (f" ({f.hint})" if f.hint else "") for ref, f in failed]
    if len(lines) == 1:
        message = f"secret store not reachable for {lines[0]}"
    else:
        message = f"secret stores not reachable for {len(lines)} references:\n  " + "\n  ".join(lines)
    raise EngineUnavailable(message, hint="make each store reachable (client installed, logged in, network up), then retry")


def check_refs(
    refs: Sequence[SecretRef],
    lookup: Lookup,
    timeout: float = 10.0,
    *,
    mask: Mask | None = None,
) -> list[dict]:
    """For ``check``: each reference resolved and reported, never its value:
    ``[{"name", "source", "found", "error", "unreachable"}]``."""
    return resolve_and_report(refs, lookup, timeout, mask=mask)[1]


def resolve_and_report(
    refs: Sequence[SecretRef],
    lookup: Lookup,
    timeout: float = 10.0,
    *,
    mask: Mask | None = None,
) -> tuple[dict[str, Secret], list[dict]]:
    """``check``'s one resolution: the values found (for planning) and ``check_refs``'s report."""
    outcomes = _resolve_all(refs, lookup, timeout)
    masking = _masking(refs, outcomes, mask)
    report = []
    for ref, outcome in zip(refs, outcomes):
        failure = outcome.failure
        error = None
        if failure is not None:
            error = _detail(failure, masking) + (f" ({failure.hint})" if failure.hint else "")
        report.append(
            {
                "name": ref.name,
                "source": ref.source,
                "found": failure is None,
                "error": error,
                "unreachable": isinstance(failure, Unreachable),
            }
        )
    return {ref.name: o.value for ref, o in zip(refs, outcomes) if o.value is not None}, report


def _masking(refs: Sequence[SecretRef], outcomes: list[_Outcome], mask: Mask | None) -> Mask:
    """The caller's masker, then one for the values just resolved (the caller's scope
    was built before they existed)."""
    resolved = [(ref.name, o.value) for ref, o in zip(refs, outcomes) if o.value is not None]
    own = secret_scope(extra=resolved).masker.mask

    def masking(text: str) -> str:
        return own(mask(text) if mask else text)

    return masking


def _detail(failure: Missing, masking: Mask, unreachable_note: bool = False) -> str:
    text = failure.message
    if unreachable_note and isinstance(failure, Unreachable):
        text = f"not reachable: {text}"
    if failure.foreign:
        text += f": {_clip(masking(failure.foreign))}"
    if failure.stderr:
        # Mask the whole stream before cutting it, so a cut never leaves part of a value.
        stderr = masking(failure.stderr.decode("utf-8", "replace")).strip()
        if stderr:
            text += f"; its stderr: {_clip(stderr)}"
    return text


def _clip(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    text = " | ".join(lines[-_STDERR_LINES:])
    return text if len(text) <= _STDERR_CHARS else "..." + text[-_STDERR_CHARS:]


def _resolve_all(refs: Sequence[SecretRef], lookup: Lookup, timeout: float) -> list[_Outcome]:
    """One outcome per reference, in order; one daemon thread each (a hung store client
    must not keep the runner from exiting)."""
    # Each store in use set up once, before the clock starts (aws-sm: importing boto3 takes a while).
    unusable = {scheme: failure for scheme in {ref.scheme for ref in refs}
                if (failure := getattr(store(scheme), "setup", lambda: None)()) is not None}
    results: dict[int, _Outcome] = {}
    lock = threading.Lock()

    def work(index: int, ref: SecretRef) -> None:
        try:
            if ref.scheme in unusable:
                raise unusable[ref.scheme]
            value = store(ref.scheme).fetch(ref, lookup, timeout)
            if not value:
                raise Missing("resolved to an empty value")
            if "\x00" in value:
                raise Missing("the value holds a NUL byte, which no environment can hold")
            outcome = _Outcome(value=Secret(value))
        except Missing as failure:
            outcome = _Outcome(failure=failure)
        except Exception as exc:  # a store client's own error: its type only, its text may hold anything
            outcome = _Outcome(failure=Missing(f"failed ({type(exc).__name__})"))
        with lock:
            results[index] = outcome

    threads = []
    for index, ref in enumerate(refs):
        thread = threading.Thread(target=work, args=(index, ref), name=f"secret-ref-{ref.name}", daemon=True)
        thread.start()
        threads.append(thread)
    deadline = time.monotonic() + timeout + _GRACE
    try:
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
    except BaseException:  # Ctrl-C, SIGTERM: the programs run in their own sessions, so stop them here
        subprocesses.kill_running()
        raise
    with lock:
        done = dict(results)
    late = _Outcome(failure=Unreachable(f"no answer within {timeout:g} s"))
    return [done.get(index, late) for index in range(len(refs))]
