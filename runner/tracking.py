"""Talking to trackers: the online check and the run-identity handshake.

Imports of tracker clients (mlflow, wandb) happen inside these functions only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from runner.plan import LaunchPlan, Planned
from runner.ui import Output


@dataclass
class Handshake:
    """What a launch gets from the trackers before it starts, and reports back after."""

    env: dict[str, str] = field(default_factory=dict)  # e.g. MLFLOW_RUN_ID, WANDB_RUN_ID
    links: dict[str, str] = field(default_factory=dict)  # tracker -> run URL / path, for reports
    _finish: Callable[[int, bytes], None] | None = None

    def finish(self, exit_code: int, masked_output: bytes = b"") -> None:
        if self._finish is not None:
            self._finish(exit_code, masked_output)


def begin(plan: LaunchPlan, out: Output) -> Handshake:
    """Create tracker runs before launch (filled in by the tracker work)."""
    return Handshake()


def online_check(plan: LaunchPlan, planned: Planned, timeout: float = 10.0) -> list[dict]:
    """[{"tracker", "status": reachable|unauthorised|unreachable|not-installed, "detail"}]."""
    return []
