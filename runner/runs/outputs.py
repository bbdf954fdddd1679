"""Tracker outputs on the host: every path a tracker writes inside the job, resolved against its mounts.

The paths: ``trackers.tensorboard_dir`` (Megatron/generic), TorchTitan's
``metrics.save_tb_folder``, the W&B directory (``trackers.wandb_save_dir`` or
``WANDB_DIR``) and a ``file:`` MLflow store. A path under a mount is on the host
at the mount's source. A path under no mount would be written inside the
container and lost with it: by default (``runs.tracker_outputs: mount``) it is
mounted from the run's own directory; with ``refuse`` the launch stops before
anything starts (exit 2, naming the path, the setting and the fix). W&B without
a directory writes under the job's working directory, so the runner gives it
one of the run's (``/primus-runner/wandb``).

On Slurm the run's directory is the job directory, which every node sees; a
user's own mount is on each node's disk unless its source is on a shared file
system, and is named so.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Callable

from runner.errors import Problem
from runner.launch_plan import LaunchPlan, Mount
from runner.records import dataclass, replace
from runner.runs.paths import CONTAINER_ROOT
from runner.trackers.job_paths import covering

MODES = ("mount", "refuse")
WANDB_DEFAULT = f"{CONTAINER_ROOT}/wandb"


@dataclass(frozen=True)
class TrackerOutput:
    tracker: str  # tensorboard | wandb | mlflow
    setting: str  # the setting that names the path
    path: str  # inside the job
    host: str | None = None  # on the host (None: cannot be told)
    how: str = "mount"  # mount (the user's bind mount) | volume (a named volume) | run (mounted from the run's directory) | unknown
    note: str = ""

    def to_dict(self) -> dict:
        return {"tracker": self.tracker, "setting": self.setting, "path": self.path, "host": self.host, "how": self.how, "note": self.note}


def wanted_paths(plan: LaunchPlan) -> list[tuple[str, str, str]]:
    """(tracker, setting, path inside the job) of every enabled tracker's output."""
    settings, public, found = plan.trackers.settings, plan.public_env(), []
    framework = plan.trackers.framework
    if plan.trackers.is_on("tensorboard"):
        if framework == "torchtitan":
            found.append(("tensorboard", "trackers.metrics.save_tb_folder", str((settings.get("metrics") or {}).get("save_tb_folder") or "tb")))
        elif settings.get("tensorboard_dir"):
            found.append(("tensorboard", "trackers.tensorboard_dir", str(settings["tensorboard_dir"])))
    if plan.trackers.is_on("wandb") and public.get("WANDB_DIR"):
        setting = "trackers.wandb_save_dir" if settings.get("wandb_save_dir") else "WANDB_DIR"
        found.append(("wandb", setting, public["WANDB_DIR"]))
    uri = public.get("MLFLOW_TRACKING_URI", "")
    if plan.trackers.is_on("mlflow") and (uri.startswith("file:") or uri.startswith("/")):
        path = uri[len("file:"):] if uri.startswith("file:") else uri
        found.append(("mlflow", "MLFLOW_TRACKING_URI", "/" + path.lstrip("/") if path.startswith("//") else path))
    return found


def plan_outputs(plan: LaunchPlan, mode: str, outputs_dir: Path, on_nodes: bool,
                 where: Callable[[tuple], str | None] | None = None) -> tuple[LaunchPlan, list[TrackerOutput], list[Problem]]:
    """Pure: the plan with the mounts the outputs need, where each output is on the host, and the refusals
    (``where``: the config's ``file:line`` of a setting, for them)."""
    outputs: list[TrackerOutput] = []
    problems: list[Problem] = []
    if plan.trackers.is_on("wandb") and not plan.public_env().get("WANDB_DIR"):
        plan = plan.with_env({"WANDB_DIR": WANDB_DEFAULT}, "tracker outputs")  # else W&B writes under an unknown workdir
    added: list[Mount] = []
    for tracker, setting, raw in wanted_paths(plan):
        path = raw if raw.startswith("/") else (posixpath.join(plan.workdir, raw) if plan.workdir else None)
        if path is None:
            outputs.append(TrackerOutput(tracker, setting, raw, None, "unknown",
                                         "a relative path under the job's working directory, which the runner does not know: "
                                         "give an absolute path, or set container.options.workdir"))
            continue
        path = posixpath.normpath(path)
        mount = covering(plan.mounts + tuple(added), path)
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
        if mode == "refuse" and path != WANDB_DEFAULT:  # the runner's own W&B directory is always mounted
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
        plan = replace(plan, mounts=plan.mounts + tuple(added))
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
            lines.append(f"{o.tracker} output {o.path} ({o.setting}) is on the host at {o.host} ({how}{'; ' + o.note if o.note else ''})")
    return lines


def after(outputs: list[TrackerOutput], wandb_run_id: str | None, wandb_mode: str) -> list[str]:
    """What to print after the job: where each output is, and the exact ``wandb sync`` of an offline run."""
    lines = []
    for o in outputs:
        if o.host is None or o.how == "volume":
            continue
        host = Path(o.host)
        if o.note:  # a node's own disk: the submitting host cannot look
            lines.append(f"{o.tracker} output: {host} on each node ({o.note})")
        elif o.tracker == "tensorboard":
            lines.append(f"TensorBoard events: {host} (tensorboard --logdir {host})")
        elif o.tracker == "mlflow":
            lines.append(f"MLflow file store: {host} (mlflow ui --backend-store-uri file:{host})")
        elif o.tracker == "wandb":
            found = sorted(host.glob(f"wandb/offline-run-*-{wandb_run_id}")) if wandb_run_id else []
            if wandb_mode in ("offline", "dryrun") and found:
                lines.append(f"W&B offline run {wandb_run_id}: {found[-1]}; upload it with: wandb sync {found[-1]}")
            elif wandb_mode in ("offline", "dryrun"):
                lines.append(f"W&B: no offline run {wandb_run_id or ''} under {host / 'wandb'} (the job did not start W&B)".replace("  ", " "))
            else:
                lines.append(f"W&B files: {host}")
    return lines


def refusals(plan: LaunchPlan | None, config) -> list[Problem]:
    """The tracker outputs a launch of ``plan`` would refuse (``runs.tracker_outputs: refuse``), for
    ``check``: the same problems the launch raises."""
    if plan is None or config is None or config.get("runs", "tracker_outputs", default="mount") != "refuse":
        return []
    return plan_outputs(plan, "refuse", Path("/"), False, where=config.where)[2]
