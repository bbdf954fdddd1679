"""Tracker outputs on the host: every path a tracker writes inside the job, resolved against its mounts.

The paths are each enabled tracker's own (``TrackerSettings.outputs``: TensorBoard's event
directory, W&B's, a ``file:`` MLflow store); the run store names no tracker. A path under a mount is on the host
at the mount's source. A path under no mount would be written inside the
container and lost with it: by default (``runs.tracker_outputs: mount``) it is
mounted from the run's own directory; with ``refuse`` the launch stops before
anything starts (exit 2, naming the path, the setting and the fix). A tracker that
writes under the job's working directory when its variable is unset (W&B) is given a
directory of the run's (``output_dir_env``: ``/primus-runner/wandb``).

On Slurm the run's directory is the job directory, which every node sees; a
user's own mount is on each node's disk unless its source is on a shared file
system, and is named so.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from pathlib import Path
from typing import Callable, NamedTuple

from runner.errors import Problem
from runner.launch_plan import LaunchPlan, Mount
from runner.runs.paths import CONTAINER_ROOT
from runner.trackers.job_paths import covering

MODES = ("mount", "refuse")


class TrackerOutput(NamedTuple):
    tracker: str  # the tracker's registry name (runner.trackers.TRACKERS)
    setting: str  # the setting that names the path
    path: str  # inside the job
    host: str | None = None  # on the host (None: cannot be told)
    how: str = "mount"  # mount (the user's bind mount) | volume (a named volume) | run (mounted from the run's directory) | unknown
    note: str = ""

    def to_dict(self) -> dict:
        return {"tracker": self.tracker, "setting": self.setting, "path": self.path, "host": self.host, "how": self.how, "note": self.note}


def wanted_paths(plan: LaunchPlan) -> list[tuple[str, str, str]]:
    """(tracker, setting, path inside the job) of every enabled tracker's output, as each declares them."""
    from runner.trackers import settings

    return [(name, setting, path) for name in plan.job.trackers.enabled for setting, path in settings(name).outputs(plan)]


def _runner_dirs(plan: LaunchPlan) -> tuple[LaunchPlan, set[str]]:
    """The plan with the directory the runner gives each enabled tracker that writes under an unknown
    working directory when its variable is unset (``output_dir_env``); those directories."""
    from runner.trackers import settings

    given: dict[str, str] = {}
    for name in plan.job.trackers.enabled:
        declared = settings(name).output_dir_env
        if declared and not plan.job.public_env().get(declared[0]):
            given[declared[0]] = f"{CONTAINER_ROOT}/{declared[1]}"
    return (plan.with_env(given, "tracker outputs") if given else plan), set(given.values())


def plan_outputs(plan: LaunchPlan, mode: str, outputs_dir: Path, on_nodes: bool,
                 where: Callable[[tuple], str | None] | None = None) -> tuple[LaunchPlan, list[TrackerOutput], list[Problem]]:
    """Pure: the plan with the mounts the outputs need, where each output is on the host, and the refusals
    (``where``: the config's ``file:line`` of a setting, for them)."""
    outputs: list[TrackerOutput] = []
    problems: list[Problem] = []
    plan, runner_dirs = _runner_dirs(plan)
    added: list[Mount] = []
    for tracker, setting, raw in wanted_paths(plan):
        path = raw if raw.startswith("/") else (posixpath.join(plan.job.workdir, raw) if plan.job.workdir else None)
        if path is None:
            outputs.append(TrackerOutput(tracker, setting, raw, None, "unknown",
                                         "a relative path under the job's working directory, which the runner does not know: "
                                         "give an absolute path, or set container.options.workdir"))
            continue
        path = posixpath.normpath(path)
        mount = covering(plan.container.mounts + tuple(added), path)
        if mount is not None:
            rest = posixpath.relpath(path, mount.target)
            if mount.named_volume:
                outputs.append(TrackerOutput(tracker, setting, path, f"volume {mount.source}" + ("" if rest == "." else f": {rest}"), "volume"))
                continue
            host = str(Path(mount.source) / rest) if rest != "." else mount.source
            run_mount = mount in added
            note = "" if run_mount or not on_nodes else "on each node's own disk, unless that path is on a shared file system"
            outputs.append(TrackerOutput(tracker, setting, path, host, "run" if run_mount else "mount", note))
            continue
        if mode == "refuse" and path not in runner_dirs:  # a directory the runner gave a tracker is always mounted
            problems.append(Problem(
                f"{setting} is {path}, which is under no mount of the job: {tracker} would write it inside the container, "
                "lost when the container is removed",
                hint=f"mount a host directory there (--volume HOST_DIR:{path}), point {setting} at a mounted path, "
                     "or set runs.tracker_outputs: mount to mount it from the run's directory",
                where=where(tuple(setting.split("."))) if where is not None and "." in setting else None,
            ))
            continue
        host = outputs_dir / path.lstrip("/")
        added.append(Mount(str(host), path, "rw"))
        outputs.append(TrackerOutput(tracker, setting, path, str(host), "run"))
    if added:
        plan = replace(plan, container=replace(plan.container, mounts=plan.container.mounts + tuple(added)))
    return plan, outputs, problems


def make_dirs(outputs: list[TrackerOutput]) -> None:
    for o in outputs:
        if o.how == "run" and o.host:
            Path(o.host).mkdir(parents=True, exist_ok=True)


def before(outputs: list[TrackerOutput]) -> list[str]:
    """What to print before the job: where each tracker's output will be on the host."""
    lines = []
    for o in outputs:
        if o.host is None:
            lines.append(f"{o.tracker} output {o.path} ({o.setting}): {o.note}")
        else:
            how = {"run": "mounted from the run's directory", "volume": "a named volume", "mount": "a mounted path"}.get(o.how, o.how)
            if o.how == "mount" and not o.note and not Path(o.host).exists():
                how += ", not there yet"  # the engine makes a missing bind source when the job starts
            lines.append(f"{o.tracker} output {o.path} ({o.setting}) is on the host at {o.host} ({how}{'; ' + o.note if o.note else ''})")
    return lines


def after(outputs: list[TrackerOutput], plan: LaunchPlan, run_ids: dict[str, str]) -> list[str]:
    """What to print after the job: where each output is, as its tracker says it (``after_line``: the
    exact ``wandb sync`` of an offline run, for one)."""
    from runner.trackers import settings

    lines = []
    for o in outputs:
        if o.host is None or o.how == "volume":
            continue
        host = Path(o.host)
        if o.note:  # a node's own disk: the submitting host cannot look
            lines.append(f"{o.tracker} output: {host} on each node ({o.note})")
        else:
            declared = settings(o.tracker)
            lines.append(declared.after_line(host, plan, run_ids.get(o.tracker)) or f"{declared.label} output: {host}")
    return lines


def refusals(plan: LaunchPlan | None, config) -> list[Problem]:
    """The tracker outputs a launch of ``plan`` would refuse (``runs.tracker_outputs: refuse``), for
    ``check``: the same problems the launch raises."""
    if plan is None or config is None or config.get("runs", "tracker_outputs", default="mount") != "refuse":
        return []
    return plan_outputs(plan, "refuse", Path("/"), False, where=config.where)[2]
