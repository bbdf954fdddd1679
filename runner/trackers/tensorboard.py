"""TensorBoard as a tracker: the job writes local event files; there is nothing to contact or open."""

from __future__ import annotations

from runner.errors import Problem
from runner.trackers.base import Analysis, Handshake, TrackedPlan, TrackerSettings
from runner.trackers.job_paths import holds

NAME = "tensorboard"
RUN_ENV: tuple[str, ...] = ()

_BOOL = {"type": "boolean"}


def _needs(analysis: Analysis) -> None:
    """Megatron writes event files only under ``tensorboard_dir``: on without one is a mistake."""
    if analysis.framework in ("megatron", "generic") and not analysis.settings.get("tensorboard_dir"):
        analysis.found.problems.append(Problem(
            "TensorBoard is enabled but trackers.tensorboard_dir is not set",
            where=analysis.config.where(("trackers", "disable_tensorboard")),
            hint="set trackers.tensorboard_dir (a path on a mounted volume), or disable_tensorboard: true",
        ))


def _outputs(plan: TrackedPlan) -> list[tuple[str, str]]:
    """Where the job writes its event files: TorchTitan's ``save_tb_folder``, else ``tensorboard_dir``."""
    settings = plan.job.trackers.settings
    if plan.job.trackers.framework == "torchtitan":
        return [("trackers.metrics.save_tb_folder", str((settings.get("metrics") or {}).get("save_tb_folder") or "tb"))]
    return [("trackers.tensorboard_dir", str(settings["tensorboard_dir"]))] if settings.get("tensorboard_dir") else []


def _after(host, plan, run_id: str | None) -> str:
    """The event files' directory when the job wrote some; else that it wrote none."""
    if holds(host, "events.out.tfevents*"):
        return f"TensorBoard events: {host} (tensorboard --logdir {host})"
    return "TensorBoard: the job wrote no event files"


SETTINGS = TrackerSettings(
    name=NAME,
    label="TensorBoard",
    keys={
        "disable_tensorboard": _BOOL,
        **{f"log_{what}_to_tensorboard": _BOOL
           for what in ("learning_rate", "loss_scale", "timers", "batch_size", "memory", "world_size", "validation_ppl")},
        "tensorboard_dir": {"type": ["string", "null"]},
        "tensorboard_log_interval": {"type": "integer", "minimum": 1},
        "tensorboard_queue_size": {"type": "integer", "minimum": 0},
    },
    metrics={"enable_tensorboard": _BOOL, "save_tb_folder": {"type": "string"}},
    switch={"megatron": "disable_tensorboard", "torchtitan": "metrics.enable_tensorboard"},
    setting_env={"megatron": {"tensorboard_dir": "TENSORBOARD_DIR"}},  # a plain `python train.py` reads it too
    needs=_needs,
    order=10,
    outputs=_outputs,
    after_line=_after,
)


def prefetch(plan: TrackedPlan) -> None:
    """Nothing to load."""


def check(plan: TrackedPlan, timeout: float) -> dict:
    from runner.trackers import httpapi  # the HTTP stack: a launch's (a plan reads SETTINGS only)

    return httpapi.status(NAME, "skipped", "writes local event files; nothing to contact")


def begin(plan: TrackedPlan, out, hs: Handshake) -> None:
    return None
