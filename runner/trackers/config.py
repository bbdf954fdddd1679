"""The ``trackers:`` section: which trackers are on, what they need, what the job sees.

Key names and defaults are the Primus backends' own (Megatron flat keys,
TorchTitan's ``metrics:`` block, MaxText's ``log_period``); ``generic`` uses the
Megatron names for any job. What each tracker reads is its own module's
``SETTINGS`` (``runner.trackers.base.TrackerSettings``); this module knows no
tracker by name. Nothing here talks to a tracker. The online check and the run
handshake live in ``runner.trackers.handshake``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Callable, Iterable, Mapping, Sequence

from runner.config import ENV_PATH, Config
from runner.policy import Wanted
from runner.resources import policies_dir
from runner.trackers import primus_overrides
from runner.trackers.base import Analysis, Findings, TrackerPlan, TrackerSettings  # noqa: F401 (TrackerPlan: the plan imports it here)

# A framework whose tracker keys are another's (``generic`` is Megatron's names for any job).
KEYS_OF = {"generic": "megatron"}
FRAMEWORK_LABELS = {"megatron": "Megatron", "torchtitan": "TorchTitan", "maxtext": "MaxText", "generic": "generic"}

# Keys that are the runner's own and never become a training override.
_NOT_OVERRIDES = {"framework", "metrics", "log_period", "overrides"}
_TRAIN_COMMAND = re.compile(r"^(pre|post)train$")


def is_primus_training(command: Sequence[str]) -> bool:
    """``… train pretrain|posttrain …`` (``primus-cli``, ``primus/cli/main.py`` or similar)."""
    return any(a == "train" and i + 1 < len(command) and _TRAIN_COMMAND.match(command[i + 1]) for i, a in enumerate(command))


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


def analyze_trackers(
    config: Config, lookup: Callable[[str], str | None], command: Sequence[str] = (), default_run_name: str | None = None
) -> TrackerPlan:
    """Decide what each tracker needs; ``lookup`` reads the value the job would see (modes, URIs).

    Each tracker of ``runner.trackers.TRACKERS`` declares its keys, its switch and its variables
    (``SETTINGS``); this walks them in their ``order``. ``default_run_name`` names the run a
    tracker creates (``run_name_key``, MLflow's) when the key is null: the Primus launcher
    switches MLflow on only for a non-null run name, so a config that says
    ``disable_mlflow: false`` alone would log nothing there.
    """
    settings = dict(config.get("trackers", default={}) or {})
    framework = settings.get("framework", "megatron")
    found = Findings()
    declared = declared_settings()
    on = {d.name: _switched_on(d, settings, framework, found) for d in declared}
    settings_env = _settings_env(framework, settings, [d for d in declared if on[d.name]], found)  # a config value beats the host's
    run_name = None
    for d in declared:
        analysis = Analysis(d, framework, settings, lookup, config, settings_env, found)
        if on[d.name]:
            d.needs(analysis)
            if d.run_name_key:
                run_name = settings.get(d.run_name_key) or default_run_name
        elif d.when_off is not None:
            d.when_off(analysis)
    _one_logger_notice(config, settings, framework, command, found)
    run_keys = [(d.run_name_key, d.switch.get("megatron")) for d in declared if d.run_name_key and on[d.name]]
    wanted_overrides = primus_overrides.wanted(settings.get("overrides"), command)
    sourced = _overrides(config, framework, settings, run_keys, run_name, declared) if wanted_overrides else []
    return TrackerPlan(
        framework,
        tuple(d.name for d in declared if on[d.name]),
        settings,
        tuple(found.wanted),
        tuple(token for token, _ in sourced),
        tuple(sourced),
        tuple(found.problems),
        tuple(found.warnings),
        tuple(found.notices),
        run_name,
        (lookup("WANDB_MODE") or "online").strip().lower(),  # a field of the plan's record, read by W&B's handshake
        config_hash(config),
    )


def declared_settings() -> list[TrackerSettings]:
    """Every registered tracker's ``SETTINGS``, in their ``order``."""
    from runner.trackers import TRACKERS, settings

    return sorted((settings(name) for name in TRACKERS), key=lambda d: d.order)


def _switched_on(declared: TrackerSettings, settings: dict, framework: str, found: Findings) -> bool:
    """Whether the framework's switch key turns this tracker on. A framework with switches of
    its own (TorchTitan's ``metrics:``) that has none for it: Megatron's switch has no effect."""
    key = declared.switch.get(KEYS_OF.get(framework, framework))
    if key is None:
        megatron = declared.switch.get("megatron")
        if framework in _frameworks_with_switches() and megatron and settings.get(megatron) is False:
            found.warnings.append(f"trackers.{megatron}: {FRAMEWORK_LABELS.get(framework, framework)} has no "
                                  f"{declared.label} integration; the setting has no effect")
        return False
    *parents, leaf = key.split(".")
    node = settings
    for part in parents:
        node = node.get(part, {}) or {}
    return node.get(leaf) is False if leaf.startswith("disable_") else bool(node.get(leaf))


def _frameworks_with_switches() -> set[str]:
    """The frameworks, besides Megatron's names, that some tracker has a switch for."""
    return {f for d in declared_settings() for f in d.switch if f != "megatron"}


def _settings_env(framework: str, settings: dict, enabled: list[TrackerSettings], found: Findings) -> dict[str, str]:
    settings_env: dict[str, str] = {}
    for declared in enabled:
        for key, env_name in declared.setting_env.get(KEYS_OF.get(framework, framework), {}).items():
            value = settings.get(key)
            if value is not None:
                settings_env[env_name] = str(value)
                found.wanted.append(Wanted(env_name, f"trackers.{key}", value=str(value)))
    return settings_env


def _one_logger_notice(config: Config, settings: dict, framework: str, command: Sequence[str], found: Findings) -> None:
    if framework == "megatron" and settings.get("enable_one_logger", True) and (is_primus_training(command) or _user_set(config, "framework")):
        found.notices.append(
            "One-Logger telemetry is on by Megatron's default unless your experiment turns it off "
            "(trackers.enable_one_logger: false in .primus.yaml overrides the experiment)"
        )


def _overrides(config: Config, framework: str, settings: dict, run_keys: list[tuple[str, str | None]], run_name: str | None,
               declared: list[TrackerSettings]) -> list[tuple[str, str]]:
    """The training command's ``--key=value`` overrides, each with the ``file:line`` that asked for it.

    Only keys a config FILE sets become overrides: Primus ranks command-line overrides above
    the experiment YAML, so a built-in default passed as an override would silently replace
    what the user's experiment says (its W&B, its MLflow, its One-Logger choice). ``run_keys``:
    (run-name key, switch key) of the enabled trackers that create a run."""
    def rendered(key: str, value, where: str) -> list[tuple[str, str]]:
        return [(token, where) for token in primus_overrides.render(key, value)]

    if framework == "torchtitan":
        metrics = settings.get("metrics", {}) or {}
        return [x for k, v in metrics.items() if (w := _file_line(config, "metrics", k)) for x in rendered(f"metrics.{k}", v, w)]
    if framework == "maxtext":
        where = _file_line(config, "log_period")
        return rendered("log_period", settings["log_period"], where) if "log_period" in settings and where else []
    wanted = {k: (v, w) for k, v in settings.items() if k not in _NOT_OVERRIDES and v is not None and (w := _file_line(config, k))}
    for d in declared:  # a non-null run name switches its tracker on in Primus: only when the tracker is on
        if d.run_name_key:
            wanted.pop(d.run_name_key, None)
    for key, switch in run_keys:
        if run_name is not None:
            wanted[key] = (run_name, _file_line(config, key) or (switch and _file_line(config, switch)) or f"trackers.{switch}")
    return [x for k, (v, w) in wanted.items() for x in rendered(k, v, w)]
