"""A launch's plan with a ``trackers:`` section, for the tracker tests (``planned_for``)."""

from __future__ import annotations

from pathlib import Path

from plan_factory import plan_from


def planned_for(work: Path, trackers: str, host: dict):
    """The plan of a busybox job named job-1 with these ``trackers:`` lines and host variables; it has no problem."""
    planned = plan_from(work, "container:\n  options:\n    image: busybox\ntrackers:\n" + trackers, host=host,
                        flags=["--gpu", "none"], name="job-1")
    assert not planned.problems, planned.problems
    return planned
