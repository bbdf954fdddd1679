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
)
