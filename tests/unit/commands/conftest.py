"""Fixtures for the command modules' tests: a toy engine whose verbs record what they were given."""

from __future__ import annotations

import pytest

from runner.engines import ENGINES
from runner.engines.base import EngineBase

# each verb's own exit code: a command wired to another verb's body returns another code
VERB_CODES = {"ps": 11, "logs": 12, "down": 13, "exec": 14, "status": 15, "cancel": 16}
CALLS: list[tuple[str, object]] = []


def _verb(name: str):
    def verb(self, sel, out):
        CALLS.append((name, sel))
        return VERB_CODES[name]
    return verb


class ToyVerbsEngine(EngineBase):
    """Every engine verb (``runner.engines.base.VERBS``), in memory: each records (verb, selection)."""

    name = "toyverbs"
    ps, logs, down, exec, status, cancel = (_verb(v) for v in VERB_CODES)

    def claims(self, name: str) -> bool:
        return name.startswith("toy-")


@pytest.fixture
def verbs(work, monkeypatch) -> list[tuple[str, object]]:
    """The toy engine registered as ``toyverbs`` (its one registry line) in a private HOME and state
    directory; the (verb, Selection) pairs its verbs were called with."""
    monkeypatch.setenv("XDG_STATE_HOME", str(work / "state"))
    monkeypatch.setitem(ENGINES, "toyverbs", (__name__, "ToyVerbsEngine"))
    CALLS.clear()
    yield CALLS
    CALLS.clear()
