"""The ``trackers:`` section: which trackers are on, what they need, what the job sees.

Key names and defaults are the Primus backends' own (Megatron flat keys,
TorchTitan's ``metrics:`` block, MaxText's ``log_period``); ``generic`` uses the
Megatron names for any job. Nothing here talks to a tracker or reads a file:
the online check and the run handshake live in ``runner.tracker_runs``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from runner.config import ENV_PATH, Config
from runner.errors import Problem
from runner.policy import Wanted
from runner.resources import policies_dir

FRAMEWORKS = ("megatron", "torchtitan", "maxtext", "generic")
WANDB_MODES = {"online", "offline", "disabled", "dryrun", "run", "shared"}
OFFLINE_WANDB_MODES = {"offline", "disabled", "dryrun"}

# Credentials, endpoints and client settings forwarded automatically when their
# tracker is on (when set on the host or in the env file).
WANDB_NAMES = (
    "WANDB_API_KEY",
    "WANDB_MODE",
    "WANDB_BASE_URL",
    "WANDB_PROJECT",
    "WANDB_ENTITY",
    "WANDB_NAME",
    "WANDB_DIR",
    "WANDB_RUN_ID",
    "WANDB_RESUME",
    "WANDB_RUN_GROUP",
    "WANDB_TAGS",
    "WANDB_RUN_NAME",  # TorchTitan
    "WANDB_TEAM",  # TorchTitan
)
MLFLOW_NAMES = (
    "MLFLOW_TRACKING_URI",
    "MLFLOW_REGISTRY_URI",
    "MLFLOW_TRACKING_USERNAME",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
    "MLFLOW_TRACKING_INSECURE_TLS",
    "MLFLOW_TRACKING_SERVER_CERT_PATH",
    "MLFLOW_EXPERIMENT_NAME",
    "MLFLOW_EXPERIMENT_ID",
    "DATABRICKS_HOST",
    "DATABRICKS_TOKEN",
    "DATABRICKS_CLIENT_ID",
    "DATABRICKS_CLIENT_SECRET",
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
    notices: tuple[str, ...] = ()
    run_name: str | None = None  # the MLflow run name the runner creates (None: MLflow off)
    wandb_mode: str = "online"
    config_hash: str = ""  # sha256 of the merged config, a tag on the tracker run

    def is_on(self, tracker: str) -> bool:
        return tracker in self.enabled


def is_primus_training(command: Sequence[str]) -> bool:
    """``… train pretrain|posttrain …`` (``primus-cli``, ``primus/cli/main.py`` or similar)."""
    return any(a == "train" and i + 1 < len(command) and _TRAIN_COMMAND.match(command[i + 1]) for i, a in enumerate(command))


def is_databricks_uri(uri: str) -> bool:
    """``databricks`` or ``databricks://profile[:prefix]`` (not ``databricks-uc``, a registry URI)."""
    return uri == "databricks" or uri.startswith("databricks://")


def config_hash(config: Config) -> str:
    blob = json.dumps(config.data, sort_keys=True, default=str, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def literal_values(config: Config, cli_env: Iterable[str] = ()) -> dict[str, str]:
    """``KEY=VALUE`` entries of the allowlist and ``--env``: they beat the host's value.

    A tracker decision (W&B offline? a Databricks URI?) must see the value the
    job will get, and ``--env WANDB_MODE=offline`` is the usual way to say it.
    """
    values: dict[str, str] = {}
    for entry in list(config.get(*ENV_PATH, default=[]) or []) + list(cli_env):
        name, sep, literal = str(entry).partition("=")
        if sep:
            values[name.strip()] = literal
    return values


def job_lookup(literals: Mapping[str, str], lookup: Callable[[str], str | None]) -> Callable[[str], str | None]:
    """Literals first, then host/env file: the precedence ``resolve_env`` applies."""
    return lambda key: literals[key] if key in literals else lookup(key)


def _flag(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _user_set(config: Config, *path: str) -> bool:
    """True when a user layer (not the built-in defaults) sets this key."""
    where = config.where(("trackers",) + path) or ""
    return bool(where) and not where.startswith(str(policies_dir()))


def analyze_trackers(
    config: Config, lookup: Callable[[str], str | None], command: Sequence[str] = (), default_run_name: str | None = None
) -> TrackerPlan:
    """Decide what each tracker needs; ``lookup`` reads the value the job would see (modes, URIs).

    ``default_run_name`` names the MLflow run when ``mlflow_run_name`` is null:
    the Primus launcher switches MLflow on only for a non-null run name, so a
    config that says ``disable_mlflow: false`` alone would log nothing there.
    """
    settings = dict(config.get("trackers", default={}) or {})
    framework = settings.get("framework", "megatron")
    metrics = settings.get("metrics", {}) or {}
    where = lambda key: config.where(("trackers", key))  # noqa: E731
    problems: list[Problem] = []
    warnings: list[str] = []
    notices: list[str] = []
    wanted: list[Wanted] = []
    training = is_primus_training(command)

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
            Problem(
                "TensorBoard is enabled but trackers.tensorboard_dir is not set",
                where=where("disable_tensorboard"),
                hint="set trackers.tensorboard_dir (a path on a mounted volume), or disable_tensorboard: true",
            )
        )

    # Tracker settings first: a value from the config beats the host's.
    settings_env: dict[str, str] = {}
    for key, env_name in SETTING_ENV.get(framework, {}).items():
        value = settings.get(key)
        tracker = "wandb" if key.startswith("wandb") else "mlflow"
        if value is not None and on.get(tracker):
            settings_env[env_name] = str(value)
            wanted.append(Wanted(env_name, f"trackers.{key}", value=str(value)))

    wandb_mode = (lookup("WANDB_MODE") or "online").strip().lower()
    if on["wandb"]:
        if wandb_mode not in WANDB_MODES:
            warnings.append(f"WANDB_MODE={wandb_mode!r} is not a W&B mode (online, offline, disabled)")
        offline = wandb_mode in OFFLINE_WANDB_MODES
        for name in WANDB_NAMES:
            if name not in settings_env:
                required = name == "WANDB_API_KEY" and not offline
                wanted.append(Wanted(name, "W&B is on and WANDB_MODE is not offline" if required else "tracker wandb", required=required))
        if wandb_mode in ("offline", "dryrun") and not (settings_env.get("WANDB_DIR") or lookup("WANDB_DIR")):
            warnings.append(
                "W&B is offline but neither trackers.wandb_save_dir nor WANDB_DIR is set: the run is written inside the container "
                "and lost when it is removed (set wandb_save_dir to a mounted path)"
            )

    run_name = None
    if on["mlflow"]:
        uri = (lookup("MLFLOW_TRACKING_URI") or "").strip()
        databricks = is_databricks_uri(uri)
        oauth = bool(lookup("DATABRICKS_CLIENT_ID") and lookup("DATABRICKS_CLIENT_SECRET"))
        for name in MLFLOW_NAMES:
            if name in settings_env:
                continue
            needed = name == "MLFLOW_TRACKING_URI" or (databricks and (name == "DATABRICKS_HOST" or (name == "DATABRICKS_TOKEN" and not oauth)))
            reason = "MLFLOW_TRACKING_URI is a Databricks URI" if databricks and name.startswith("DATABRICKS") else "tracker mlflow"
            wanted.append(Wanted(name, reason, required=needed))
        run_name = settings.get("mlflow_run_name") or default_run_name
    else:
        stray = [k for k, v in settings.items() if k.startswith("mlflow_upload_") and v]
        if stray:
            warnings.append(f"{', '.join('trackers.' + k for k in stray)} set but MLflow is disabled: no effect (set disable_mlflow: false)")
        if settings.get("mlflow_run_name") and framework in ("megatron", "generic"):
            warnings.append(
                "trackers.mlflow_run_name is set but MLflow is disabled: it is not passed to the job "
                "(the Primus launcher would switch MLflow on for it); set disable_mlflow: false to use MLflow"
            )

    one_logger = settings.get("enable_one_logger", True)
    if framework == "megatron" and one_logger and (training or _user_set(config, "framework")):
        notices.append(
            "One-Logger telemetry is on by default for Megatron (trackers.enable_one_logger: true); set it to false to opt out"
        )

    overrides: list[str] = []
    if training:
        if framework == "torchtitan":
            overrides += [x for k, v in metrics.items() for x in (f"--metrics.{k}", _flag(v))]
        elif framework == "maxtext":
            if "log_period" in settings:
                overrides += ["--log_period", _flag(settings["log_period"])]
        else:
            effective = dict(settings)
            if on["mlflow"]:
                effective["mlflow_run_name"] = run_name
            else:
                effective.pop("mlflow_run_name", None)  # a non-null name would switch MLflow on in Primus
            overrides += [x for k, v in effective.items() if k not in _NOT_OVERRIDES and v is not None for x in (f"--{k}", _flag(v))]

    enabled = tuple(t for t in ("tensorboard", "wandb", "mlflow") if on[t])
    return TrackerPlan(
        framework,
        enabled,
        settings,
        tuple(wanted),
        tuple(overrides),
        tuple(problems),
        tuple(warnings),
        tuple(notices),
        run_name,
        wandb_mode,
        config_hash(config),
    )
