"""The ``trackers:`` section: which trackers are on, what they need, what the job sees.

Key names and defaults are the Primus backends' own (Megatron flat keys,
TorchTitan's ``metrics:`` block, MaxText's ``log_period``); ``generic`` uses the
Megatron names for any job. Nothing here talks to a tracker: the online check
and the run handshake live in ``runner.tracking``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from runner.config import Config
from runner.errors import Problem
from runner.policy import Wanted

FRAMEWORKS = ("megatron", "torchtitan", "maxtext", "generic")
OFFLINE_WANDB_MODES = {"offline", "disabled", "dryrun"}

# Credentials and endpoints forwarded automatically when their tracker is on.
WANDB_NAMES = ("WANDB_API_KEY", "WANDB_MODE", "WANDB_BASE_URL", "WANDB_PROJECT", "WANDB_ENTITY", "WANDB_RUN_NAME", "WANDB_TEAM")
MLFLOW_NAMES = (
    "MLFLOW_TRACKING_URI",
    "MLFLOW_REGISTRY_URI",
    "MLFLOW_TRACKING_USERNAME",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
    "MLFLOW_TRACKING_INSECURE_TLS",
    "MLFLOW_EXPERIMENT_NAME",
    "DATABRICKS_HOST",
    "DATABRICKS_TOKEN",
)
# trackers.<key> -> the environment variable the client reads, per framework.
SETTING_ENV = {
    "megatron": {
        "wandb_project": "WANDB_PROJECT",
        "wandb_entity": "WANDB_ENTITY",
        "wandb_exp_name": "WANDB_NAME",
        "wandb_save_dir": "WANDB_DIR",
        "mlflow_experiment_name": "MLFLOW_EXPERIMENT_NAME",
    },
    "torchtitan": {
        "wandb_project": "WANDB_PROJECT",
        "wandb_entity": "WANDB_TEAM",
        "wandb_exp_name": "WANDB_RUN_NAME",
        "wandb_save_dir": "WANDB_DIR",
    },
}
SETTING_ENV["generic"] = SETTING_ENV["megatron"]
SETTING_ENV["maxtext"] = {}

# Keys that are the runner's own and never become a training override.
_NOT_OVERRIDES = {"framework", "metrics", "log_period"}
_TRAIN_COMMAND = re.compile(r"^(pre|post)train$")


@dataclass(frozen=True)
class TrackerPlan:
    framework: str
    enabled: tuple[str, ...]
    settings: dict
    wanted: tuple[Wanted, ...] = ()
    overrides: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()

    def is_on(self, tracker: str) -> bool:
        return tracker in self.enabled


def is_primus_training(command: Sequence[str]) -> bool:
    """``… train pretrain|posttrain …`` (``primus-cli``, ``primus/cli/main.py`` or similar)."""
    return any(a == "train" and i + 1 < len(command) and _TRAIN_COMMAND.match(command[i + 1]) for i, a in enumerate(command))


def _flag(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def analyze_trackers(config: Config, lookup: Callable[[str], str | None], command: Sequence[str] = ()) -> TrackerPlan:
    """Decide what each tracker needs; ``lookup`` reads a host/env-file value (for modes and URIs)."""
    settings = dict(config.get("trackers", default={}) or {})
    framework = settings.get("framework", "megatron")
    metrics = settings.get("metrics", {}) or {}
    where = lambda key: config.where(("trackers", key))  # noqa: E731
    problems: list[Problem] = []
    warnings: list[str] = []
    wanted: list[Wanted] = []

    if framework == "torchtitan":
        on = {"tensorboard": bool(metrics.get("enable_tensorboard")), "wandb": bool(metrics.get("enable_wandb")), "mlflow": False}
        if settings.get("disable_mlflow") is False:
            warnings.append("trackers.disable_mlflow: TorchTitan has no MLflow integration; the setting has no effect")
    elif framework == "maxtext":
        on = {"tensorboard": False, "wandb": False, "mlflow": False}
    else:
        on = {t: settings.get(f"disable_{t}") is False for t in ("tensorboard", "wandb", "mlflow")}

    if on["tensorboard"] and framework in ("megatron", "generic") and not settings.get("tensorboard_dir"):
        problems.append(
            Problem("TensorBoard is enabled but trackers.tensorboard_dir is not set", where=where("disable_tensorboard"), hint="set trackers.tensorboard_dir")
        )

    if on["wandb"]:
        mode = (lookup("WANDB_MODE") or "").lower()
        offline = mode in OFFLINE_WANDB_MODES
        for name in WANDB_NAMES:
            wanted.append(Wanted(name, "tracker wandb", required=(name == "WANDB_API_KEY" and not offline)))

    if on["mlflow"]:
        uri = lookup("MLFLOW_TRACKING_URI") or ""
        databricks = uri == "databricks" or uri.startswith("databricks://")
        for name in MLFLOW_NAMES:
            needed = name == "MLFLOW_TRACKING_URI" or (databricks and name in ("DATABRICKS_HOST", "DATABRICKS_TOKEN"))
            wanted.append(Wanted(name, "tracker mlflow (Databricks)" if databricks and name.startswith("DATABRICKS") else "tracker mlflow", required=needed))
    else:
        stray = [k for k, v in settings.items() if k.startswith("mlflow_upload_") and v]
        if stray:
            warnings.append(f"{', '.join('trackers.' + k for k in stray)} set but MLflow is disabled: no effect (set disable_mlflow: false)")

    if framework == "megatron" and settings.get("enable_one_logger", True) and is_primus_training(command):
        warnings.append("One-Logger telemetry is on by default for Megatron (trackers.enable_one_logger: true); set it to false to opt out")

    for key, env_name in SETTING_ENV.get(framework, {}).items():
        value = settings.get(key)
        tracker = "wandb" if key.startswith("wandb") else "mlflow"
        if value is not None and on.get(tracker):
            wanted.append(Wanted(env_name, f"trackers.{key}", value=str(value)))

    overrides: list[str] = []
    if is_primus_training(command):
        if framework == "torchtitan":
            overrides += [x for k, v in metrics.items() for x in (f"--metrics.{k}", _flag(v))]
        elif framework == "maxtext":
            if "log_period" in settings:
                overrides += ["--log_period", _flag(settings["log_period"])]
        else:
            overrides += [x for k, v in settings.items() if k not in _NOT_OVERRIDES and v is not None for x in (f"--{k}", _flag(v))]

    enabled = tuple(t for t in ("tensorboard", "wandb", "mlflow") if on[t])
    return TrackerPlan(framework, enabled, settings, tuple(wanted), tuple(overrides), tuple(problems), tuple(warnings))
