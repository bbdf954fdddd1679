"""What W&B reads: its ``trackers:`` keys, its switch, its variables (``wandb.SETTINGS``)."""

from __future__ import annotations

from runner.trackers.base import Analysis, TrackerSettings

WANDB_MODES = {"online", "offline", "disabled", "dryrun", "run", "shared"}
OFFLINE_WANDB_MODES = {"offline", "disabled", "dryrun"}

# The API key, the endpoint and client settings, forwarded when W&B is on and they are set.
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

_TEXT = {"type": ["string", "null"]}


def _needs(analysis: Analysis) -> None:
    """The API key is required unless the mode contacts nothing."""
    mode = (analysis.lookup("WANDB_MODE") or "online").strip().lower()
    if mode not in WANDB_MODES:
        analysis.found.warnings.append(f"WANDB_MODE={mode!r} is not a W&B mode (online, offline, disabled)")
    offline = mode in OFFLINE_WANDB_MODES
    for name in WANDB_NAMES:
        if name not in analysis.settings_env:
            required = name == "WANDB_API_KEY" and not offline
            analysis.want(name, "W&B is on and WANDB_MODE is not offline" if required else "tracker wandb", required=required)


def _outputs(plan) -> list[tuple[str, str]]:
    """The W&B directory: ``trackers.wandb_save_dir`` (as ``WANDB_DIR``), or ``WANDB_DIR`` itself."""
    directory = plan.job.public_env().get("WANDB_DIR")
    if not directory:
        return []
    return [("trackers.wandb_save_dir" if plan.job.trackers.settings.get("wandb_save_dir") else "WANDB_DIR", directory)]


def _after(host, plan, run_id: str | None) -> str:
    """Where the run's files are; for an offline run, the exact ``wandb sync`` that uploads it."""
    if plan.job.trackers.wandb_mode not in ("offline", "dryrun"):
        return f"W&B files: {host}"
    found = sorted(host.glob(f"wandb/offline-run-*-{run_id}")) if run_id else []
    if found:
        return f"W&B offline run {run_id}: {found[-1]}; upload it with: wandb sync {found[-1]}"
    return f"W&B: no offline run {run_id or ''} under {host / 'wandb'} (the job did not start W&B)".replace("  ", " ")


SETTINGS = TrackerSettings(
    name="wandb",
    label="W&B",
    keys={"disable_wandb": {"type": "boolean"}, "wandb_project": _TEXT, "wandb_exp_name": _TEXT, "wandb_save_dir": _TEXT,
          "wandb_entity": _TEXT},
    metrics={"enable_wandb": {"type": "boolean"}},
    switch={"megatron": "disable_wandb", "torchtitan": "metrics.enable_wandb"},
    setting_env={
        "megatron": {"wandb_project": "WANDB_PROJECT", "wandb_entity": "WANDB_ENTITY", "wandb_exp_name": "WANDB_NAME",
                     "wandb_save_dir": "WANDB_DIR"},
        "torchtitan": {"wandb_project": "WANDB_PROJECT", "wandb_entity": "WANDB_TEAM", "wandb_exp_name": "WANDB_RUN_NAME",
                       "wandb_save_dir": "WANDB_DIR"},
    },
    names=WANDB_NAMES,
    endpoints=("WANDB_BASE_URL", "WANDB_HOST"),
    needs=_needs,
    order=20,
    run_id="WANDB_RUN_ID",
    requeue_env={"WANDB_RESUME": "allow"},  # a requeued job continues the same W&B run
    outputs=_outputs,
    output_dir_env=("WANDB_DIR", "wandb"),  # else W&B writes under the job's working directory, which nobody knows
    after_line=_after,
)
