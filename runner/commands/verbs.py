"""The engine verbs behind ``ps``, ``down``, ``status``, ``cancel`` and ``logs``: the verb of the
engine ``--engine`` names, else of the first engine that declares it (or claims the name: a Slurm job id)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import Selection
    from runner.ui import Output


def run_verb(name: str, selection: "Selection", out: "Output", claimed: str | None = None) -> int:
    """The engine's ``name`` verb on ``selection``; ``claimed``: an id an engine may claim as its own kind."""
    from runner.engines import engine_for_verb, verb

    return verb(engine_for_verb(name, selection.engine, claimed), name)(selection, out)
