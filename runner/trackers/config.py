"""The ``trackers:`` section: which trackers are on, what they need, what the job sees.

Key names and defaults are the Primus backends' own (Megatron flat keys,
TorchTitan's ``metrics:`` block, MaxText's ``log_period``); ``generic`` uses the
Megatron names for any job. Nothing here talks to a tracker; the one file it
reads is ``~/.databrickscfg``, for the names of a profile's keys (never a
value but the host). The online check and the run handshake live in
``runner.trackers.runs``.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from runner.trackers import primus_overrides
from runner.config import ENV_PATH, Config
from runner.errors import Problem
from runner.policy import Classifier, Wanted
from runner.resources import policies_dir

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
    "DATABRICKS_CONFIG_PROFILE",
)
# What MLflow's artifact stores read (the job's client writes artifacts with
# them, and so does the runner when it uploads the log). Forwarded when set and
# MLflow is on. The credentials among them are secrets: STORE_SECRETS must each
# match the secret policy (passthrough.secrets), or they are not forwarded.
STORE_NAMES = (
    "MLFLOW_S3_ENDPOINT_URL",
    "MLFLOW_S3_IGNORE_TLS",
    "MLFLOW_S3_UPLOAD_EXTRA_ARGS",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_CA_BUNDLE",
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_SECRET",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "MLFLOW_GCS_UPLOAD_CHUNK_SIZE",
    "MLFLOW_ARTIFACT_UPLOAD_DOWNLOAD_TIMEOUT",
)
STORE_SECRETS = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_STORAGE_CONNECTION_STRING",  # holds AccountKey=...
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_CLIENT_SECRET",
)
# Everything the runner's own MLflow client sees (runner.trackers.runs._client_env).
CLIENT_NAMES = MLFLOW_NAMES + STORE_NAMES
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
_NOT_OVERRIDES = {"framework", "metrics", "log_period", "overrides"}
_TRAIN_COMMAND = re.compile(r"^(pre|post)train$")


@dataclass(frozen=True)
class TrackerPlan:
    framework: str
    enabled: tuple[str, ...]
    settings: dict
    wanted: tuple[Wanted, ...] = ()
    overrides: tuple[str, ...] = ()
    # (override, file:line of the key that asked for it): an override comes only from a config file
    override_sources: tuple[tuple[str, str], ...] = ()
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


def _user_set(config: Config, *path: str) -> bool:
    """True when a user layer (not the built-in defaults) sets this key."""
    return _file_line(config, *path) is not None


def _file_line(config: Config, *path: str) -> str | None:
    """``file:line`` of ``trackers.<path>`` when a config FILE sets it; None for a built-in default."""
    where = config.where(("trackers",) + path) or ""
    if not where or where.startswith(str(policies_dir())) or where.startswith("command line"):
        return None
    return where


@dataclass
class _Findings:
    """What the steps of ``analyze_trackers`` find, gathered so every problem is reported at once."""

    problems: list[Problem]
    warnings: list[str]
    notices: list[str]
    wanted: list[Wanted]


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
    found = _Findings([], [], [], [])
    training = is_primus_training(command)
    on = _enabled(settings, framework, found)
    if on["tensorboard"] and framework in ("megatron", "generic") and not settings.get("tensorboard_dir"):
        found.problems.append(
            Problem(
                "TensorBoard is enabled but trackers.tensorboard_dir is not set",
                where=config.where(("trackers", "disable_tensorboard")),
                hint="set trackers.tensorboard_dir (a path on a mounted volume), or disable_tensorboard: true",
            )
        )
    settings_env = _settings_env(framework, settings, on, found)  # a value from the config beats the host's
    wandb_mode = (lookup("WANDB_MODE") or "online").strip().lower()
    if on["wandb"]:
        _wandb_needs(wandb_mode, lookup, settings_env, found)
    run_name = None
    if on["mlflow"]:
        _mlflow_needs(Classifier.from_config(config), lookup, settings_env, found)
        run_name = settings.get("mlflow_run_name") or default_run_name
    else:
        _mlflow_off_warnings(settings, framework, found)
    if framework == "megatron" and settings.get("enable_one_logger", True) and (training or _user_set(config, "framework")):
        found.notices.append(
            "One-Logger telemetry is on by Megatron's default unless your experiment turns it off "
            "(trackers.enable_one_logger: false in .primus.yaml overrides the experiment)"
        )
    sourced = _overrides(config, framework, settings, on["mlflow"], run_name) if primus_overrides.wanted(settings.get("overrides"), command) else []
    overrides = [token for token, _ in sourced]
    return TrackerPlan(
        framework,
        tuple(t for t in ("tensorboard", "wandb", "mlflow") if on[t]),
        settings,
        tuple(found.wanted),
        tuple(overrides),
        tuple(sourced),
        tuple(found.problems),
        tuple(found.warnings),
        tuple(found.notices),
        run_name,
        wandb_mode,
        config_hash(config),
    )


def _enabled(settings: dict, framework: str, found: _Findings) -> dict[str, bool]:
    metrics = settings.get("metrics", {}) or {}
    if framework == "torchtitan":
        if settings.get("disable_mlflow") is False:
            found.warnings.append("trackers.disable_mlflow: TorchTitan has no MLflow integration; the setting has no effect")
        return {"tensorboard": bool(metrics.get("enable_tensorboard")), "wandb": bool(metrics.get("enable_wandb")), "mlflow": False}
    if framework == "maxtext":
        return {"tensorboard": False, "wandb": False, "mlflow": False}
    return {t: settings.get(f"disable_{t}") is False for t in ("tensorboard", "wandb", "mlflow")}


def _settings_env(framework: str, settings: dict, on: dict[str, bool], found: _Findings) -> dict[str, str]:
    settings_env: dict[str, str] = {}
    for key, env_name in SETTING_ENV.get(framework, {}).items():
        value = settings.get(key)
        tracker = "wandb" if key.startswith("wandb") else "mlflow"
        if value is not None and on.get(tracker):
            settings_env[env_name] = str(value)
            found.wanted.append(Wanted(env_name, f"trackers.{key}", value=str(value)))
    return settings_env


def _wandb_needs(mode: str, lookup: Callable[[str], str | None], settings_env: dict[str, str], found: _Findings) -> None:
    if mode not in WANDB_MODES:
        found.warnings.append(f"WANDB_MODE={mode!r} is not a W&B mode (online, offline, disabled)")
    offline = mode in OFFLINE_WANDB_MODES
    for name in WANDB_NAMES:
        if name not in settings_env:
            required = name == "WANDB_API_KEY" and not offline
            found.wanted.append(Wanted(name, "W&B is on and WANDB_MODE is not offline" if required else "tracker wandb", required=required))


def _mlflow_needs(classifier: Classifier, lookup: Callable[[str], str | None], settings_env: dict[str, str], found: _Findings) -> None:
    uri = (lookup("MLFLOW_TRACKING_URI") or "").strip()
    required = {"MLFLOW_TRACKING_URI": "tracker mlflow"}
    if is_databricks_uri(uri):
        required.update(_databricks_signin(uri, lookup, found))
    for name in MLFLOW_NAMES + STORE_NAMES:
        if name in settings_env:
            continue
        if name in STORE_SECRETS and not classifier.is_secret(name):
            if lookup(name):  # never forward a credential the masker would not know
                found.warnings.append(
                    f"{name} is set but not forwarded: it is an artifact-store credential and the secret policy does not list it "
                    "(add it to passthrough.secrets)"
                )
            continue
        reason = required.get(name) or ("artifact store" if name in STORE_NAMES else "tracker mlflow")
        found.wanted.append(Wanted(name, reason, required=name in required))


def _mlflow_off_warnings(settings: dict, framework: str, found: _Findings) -> None:
    stray = [k for k, v in settings.items() if k.startswith("mlflow_upload_") and v]
    if stray:
        found.warnings.append(f"{', '.join('trackers.' + k for k in stray)} set but MLflow is disabled: no effect (set disable_mlflow: false)")
    if settings.get("mlflow_run_name") and framework in ("megatron", "generic"):
        found.warnings.append(
            "trackers.mlflow_run_name is set but MLflow is disabled: it is not passed to the job "
            "(the Primus launcher would switch MLflow on for it); set disable_mlflow: false to use MLflow"
        )


def _overrides(config: Config, framework: str, settings: dict, mlflow_on: bool, run_name: str | None) -> list[tuple[str, str]]:
    """The training command's ``--key=value`` overrides, each with the ``file:line`` that asked for it.

    Only keys a config FILE sets become overrides: Primus ranks command-line overrides above
    the experiment YAML, so a built-in default passed as an override would silently replace
    what the user's experiment says (its W&B, its MLflow, its One-Logger choice)."""
    def rendered(key: str, value, where: str) -> list[tuple[str, str]]:
        return [(token, where) for token in primus_overrides.render(key, value)]

    if framework == "torchtitan":
        metrics = settings.get("metrics", {}) or {}
        return [x for k, v in metrics.items() if (w := _file_line(config, "metrics", k)) for x in rendered(f"metrics.{k}", v, w)]
    if framework == "maxtext":
        where = _file_line(config, "log_period")
        return rendered("log_period", settings["log_period"], where) if "log_period" in settings and where else []
    wanted = {k: (v, w) for k, v in settings.items() if k not in _NOT_OVERRIDES and v is not None and (w := _file_line(config, k))}
    wanted.pop("mlflow_run_name", None)  # a non-null name switches MLflow on in Primus: only when MLflow is on
    if mlflow_on and run_name is not None:
        where = _file_line(config, "mlflow_run_name") or _file_line(config, "disable_mlflow") or "trackers.disable_mlflow"
        wanted["mlflow_run_name"] = (run_name, where)
    return [x for k, (v, w) in wanted.items() for x in rendered(k, v, w)]


# ---------------------------------------------------------------- Databricks sign-in

_DATABRICKS = "MLFLOW_TRACKING_URI is a Databricks URI"


def databricks_config_file(lookup: Callable[[str], str | None] = os.environ.get) -> str:
    return lookup("DATABRICKS_CONFIG_FILE") or os.path.expanduser("~/.databrickscfg")


def databricks_profile(profile: str, config_file: str | None = None) -> tuple[str, frozenset[str]] | None:
    """(host, names of the keys set) of a ``~/.databrickscfg`` profile; None when the file or profile is missing.

    The host is the only value returned: the file also holds tokens and client secrets.
    """
    parser = configparser.ConfigParser(interpolation=None)
    try:
        if not parser.read(config_file or databricks_config_file()):
            return None
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    if profile.upper() == "DEFAULT":
        section = dict(parser.defaults())
    elif parser.has_section(profile):
        section = dict(parser.items(profile))
    else:
        return None
    return section.get("host", "").strip(), frozenset(k for k, v in section.items() if str(v).strip())


def _databricks_signin(uri: str, lookup: Callable[[str], str | None], found: _Findings) -> dict[str, str]:
    """Required names (with why) for the sign-in the user chose; a profile's gaps become problems."""
    profile = uri[len("databricks://"):].split(":")[0] if uri.startswith("databricks://") else lookup("DATABRICKS_CONFIG_PROFILE")
    if profile:
        _check_profile(uri, profile, databricks_config_file(lookup), found)
        return {}
    required = {"DATABRICKS_HOST": _DATABRICKS}
    if lookup("DATABRICKS_TOKEN"):
        return required
    if lookup("DATABRICKS_CLIENT_ID") or lookup("DATABRICKS_CLIENT_SECRET"):
        oauth = "Databricks OAuth machine-to-machine sign-in needs both DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET"
        return {**required, "DATABRICKS_CLIENT_ID": oauth, "DATABRICKS_CLIENT_SECRET": oauth}
    required["DATABRICKS_TOKEN"] = f"{_DATABRICKS}; or DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET for OAuth"
    return required


def _check_profile(uri: str, profile: str, path: str, found: _Findings) -> None:
    section = databricks_profile(profile, path)
    fix = (
        f"create it with `databricks configure --profile {profile}` (token) or `databricks auth login --profile {profile}`, "
        "or use MLFLOW_TRACKING_URI=databricks with DATABRICKS_HOST and DATABRICKS_TOKEN (or DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET)"
    )
    if section is None:
        what = "has no such profile" if os.path.exists(path) else "does not exist"
        found.problems.append(Problem(f"MLFLOW_TRACKING_URI={uri} signs in with profile [{profile}] of {path}, which {what}", hint=fix))
        return
    host, keys = section
    missing = [] if host else ["host"]
    if "client_id" in keys or "client_secret" in keys:
        missing += [k for k in ("client_id", "client_secret") if k not in keys]
    elif not keys & {"token", "auth_type", "password", "azure_client_secret", "google_credentials", "metadata_service_url"}:
        missing.append("token (or client_id and client_secret)")
    if missing:
        found.problems.append(Problem(f"profile [{profile}] of {path} has no {', '.join(missing)} (MLFLOW_TRACKING_URI={uri})", hint=fix))
    found.warnings.append(
        f"MLFLOW_TRACKING_URI={uri}: the job's own MLflow client reads profile [{profile}] from ~/.databrickscfg inside the container; "
        "mount the file read-only there, or sign the job in with DATABRICKS_HOST and DATABRICKS_TOKEN (or DATABRICKS_CLIENT_ID/SECRET)"
    )
