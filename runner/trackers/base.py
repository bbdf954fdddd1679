"""The tracker plug-in protocol, what a tracker sees of a launch, and the handshake it fills.

A tracker is one module of this package with the names below (``NAME``,
``RUN_ENV``, ``prefetch``, ``check``, ``begin``) and one line in
``runner.trackers.TRACKERS``. It reads the plan through ``TrackedPlan`` (a
structural type: trackers sit below the plan, whose settings they provide).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from runner.policy import EnvDecision
    from runner.secrets import Secret
    from runner.trackers.config import TrackerPlan
    from runner.ui import Output

Finisher = Callable[[int, bytes], None]  # (exit code, masked output) once the job has ended; never raises


class TrackedPlan(Protocol):
    """The part of ``runner.plan.LaunchPlan`` the trackers read."""

    name: str
    image: str
    trackers: "TrackerPlan"
    mounts: "Sequence[Any]"  # runner.plan.Mount: where a path the job writes is on the host

    @property
    def forwarded(self) -> "Sequence[EnvDecision]": ...

    def public_env(self) -> Mapping[str, str]: ...

    def secret_env(self) -> "Mapping[str, Secret]": ...


@dataclass
class Handshake:
    """What a launch gets from the trackers before it starts, and reports back after."""

    env: dict[str, str] = field(default_factory=dict)  # e.g. MLFLOW_RUN_ID, WANDB_RUN_ID
    links: dict[str, str] = field(default_factory=dict)  # tracker -> run URL / path, for reports
    _finish: Finisher | None = None

    def finish(self, exit_code: int, masked_output: bytes = b"") -> None:
        if self._finish is not None:
            self._finish(exit_code, masked_output)


class Tracker(Protocol):
    """One tracker (a module). ``plan.trackers.is_on(NAME)`` says whether it takes part in a launch."""

    NAME: str
    RUN_ENV: tuple[str, ...]  # the variables begin() may hand the job (an engine's request reserves them by name)

    def prefetch(self, plan: TrackedPlan) -> None:
        """Start whatever slow loading begin() will need, as soon as the plan exists."""

    def check(self, plan: TrackedPlan, timeout: float) -> dict:
        """``check --online``: {"tracker", "status": reachable|unauthorised|unreachable|not-installed|skipped, "detail"}."""

    def begin(self, plan: TrackedPlan, out: "Output", hs: Handshake) -> Finisher | None:
        """Before launch: create the run, put its ids in ``hs.env`` and its link in ``hs.links``;
        raise (``EngineUnavailable`` 1, ``CredentialRefused`` 2) before anything starts."""
