"""What a tracker sees of a launch: the plan's names, image, forwarded variables and tracker
settings. A structural type, so trackers sit below the plan that uses their settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from runner.policy import EnvDecision
    from runner.secrets import Secret
    from runner.trackers.config import TrackerPlan


class TrackedPlan(Protocol):
    """The part of ``runner.plan.LaunchPlan`` the trackers read."""

    name: str
    image: str
    trackers: "TrackerPlan"

    @property
    def forwarded(self) -> "Sequence[EnvDecision]": ...

    def public_env(self) -> Mapping[str, str]: ...

    def secret_env(self) -> "Mapping[str, Secret]": ...
