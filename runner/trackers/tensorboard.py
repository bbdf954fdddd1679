"""TensorBoard as a tracker: the job writes local event files; there is nothing to contact or open."""

from __future__ import annotations

from runner.trackers import httpapi
from runner.trackers.base import Handshake, TrackedPlan

NAME = "tensorboard"
RUN_ENV: tuple[str, ...] = ()


def prefetch(plan: TrackedPlan) -> None:
    """Nothing to load."""


def check(plan: TrackedPlan, timeout: float) -> dict:
    return httpapi.status(NAME, "skipped", "writes local event files; nothing to contact")


def begin(plan: TrackedPlan, out, hs: Handshake) -> None:
    return None
