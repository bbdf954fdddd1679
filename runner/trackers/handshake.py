"""The trackers of a launch, together: the online check and the run handshake, each
asked of every enabled tracker plug-in (``runner.trackers.TRACKERS``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from runner.trackers import enabled
from runner.trackers.base import Finisher, Handshake, TrackedPlan
from runner.ui import Output

__all__ = ["Handshake", "begin", "online_check", "prefetch", "run_env_names"]


def prefetch(plan: TrackedPlan) -> None:
    """Start what the handshake will load (the MLflow client for Databricks) beside the preflight."""
    for tracker in enabled(plan):
        tracker.prefetch(plan)


def online_check(plan: TrackedPlan, timeout: float = 10.0) -> list[dict]:
    """[{"tracker", "status": reachable|unauthorised|unreachable|not-installed|skipped, "detail"}].

    One entry per enabled tracker, checked in parallel, each within ``timeout`` per request.
    """
    trackers = enabled(plan)
    if not trackers:
        return []
    with ThreadPoolExecutor(max_workers=len(trackers)) as pool:
        return [f.result() for f in [pool.submit(t.check, plan, timeout) for t in trackers]]


def run_env_names(plan: TrackedPlan) -> tuple[str, ...]:
    """The names ``begin`` may set for this plan (an engine's request reserves them by name)."""
    return tuple(name for tracker in enabled(plan) for name in tracker.RUN_ENV)


def begin(plan: TrackedPlan, out: Output) -> Handshake:
    """Create tracker runs before launch; raise (exit 1 unreachable, 2 refused credentials) before anything starts.

    The backend adds ``env`` to the plan (``plan.with_env``) and calls
    ``finish(exit_code, masked_output)`` once the job has ended.
    """
    hs = Handshake()
    finishers: list[Finisher] = [fn for tracker in enabled(plan) if (fn := tracker.begin(plan, out, hs))]
    if finishers:

        def finish(exit_code: int, masked_output: bytes) -> None:
            for fn in finishers:
                fn(exit_code, masked_output)

        hs._finish = finish
    return hs
