"""The launcher's ``direct:`` section, acting as it does in the Primus launcher.

``primus-cli-direct.sh`` reads one config file itself (``~/.primus.yaml``, else the
checkout's ``runner/.primus.yaml``) and takes ``run_mode``, ``script``, ``numa``,
``log_file`` and ``patch`` from its ``direct:`` section. The runner merges every layer, so a
key set in any other file reaches the script as the command-line option that means the
same (``--single``, ``--script``, ``--numa``/``--no-numa``, ``--log_file``, ``--patch``),
before the user's own options (the script keeps the last value, so those win). A value the
script cannot take is an error naming the key. ``direct.env`` is forwarded under the env
policy (``runner.commands.launcher``); ``debug`` and ``dry_run`` are the runner's switches;
``nnodes``, ``gpus_per_node``, ``master_addr`` and ``master_port`` are the job's
``NNODES`` … where nothing else sets them (the script's own defaults otherwise).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from runner.config.layers import CHECKOUT_FILE
from runner.errors import ConfigError, Problem

# direct.KEY -> the variable the direct launcher reads for it
ENV_KEYS = {"nnodes": "NNODES", "gpus_per_node": "GPUS_PER_NODE", "master_addr": "MASTER_ADDR", "master_port": "MASTER_PORT"}


def own_file(checkout: str | None, home: str | None, on_host: bool) -> str | None:
    """The file the direct script loads itself: ``~/.primus.yaml`` on this host when it exists,
    else the checkout's ``runner/.primus.yaml`` (a container's HOME holds none of the user's)."""
    if on_host and home and (Path(home) / ".primus.yaml").is_file():
        return str(Path(home) / ".primus.yaml")
    return os.path.join(checkout, CHECKOUT_FILE) if checkout else None


def section_args(config, script_reads: str | None) -> list[str]:
    """The direct launcher's options for the ``direct:`` keys set in a file it does not read itself."""
    args: list[str] = []
    problems: list[Problem] = []
    for key in ("run_mode", "script", "numa", "log_file", "patch"):
        value = config.get("direct", key, default=None)
        where = config.where(("direct", key))
        if value is None or (where and script_reads and where.rsplit(":", 1)[0] == script_reads):
            continue
        found = _option(key, value)
        if isinstance(found, str):
            problems.append(Problem(f"direct.{key}: {found}", where=where))
        else:
            args += found
    if problems:
        raise ConfigError(problems)
    return args


def _option(key: str, value) -> list[str] | str:
    """The options for one key, or why the direct launcher cannot take its value."""
    if key == "run_mode":
        if value not in ("single", "torchrun"):
            return f"{value!r}: the direct launcher runs single (python3) or torchrun"
        return ["--single"] if value == "single" else []
    if key == "numa":
        text = str(value).lower()
        if text not in ("true", "false", "auto"):
            return f"{value!r}: true, false or auto"
        return {"true": ["--numa"], "false": ["--no-numa"], "auto": []}[text]
    if key == "patch":
        return [token for patch in value for token in ("--patch", str(patch))]
    return [f"--{key}", str(value)] if str(value) else []


def env_defaults(config, environ: Mapping[str, str], given: tuple[str, ...]) -> list[str]:
    """``NAME=value`` for each ``direct.nnodes`` … a file of the user's sets and the user's environment
    and ``--env`` leave unset. The launcher's own ``runner/.primus.yaml`` values are the script's
    defaults, which it derives from Slurm inside an allocation: they are left to it."""
    from runner.plan import from_defaults, from_launcher_file

    named = {entry.partition("=")[0] for entry in given}
    found = []
    for key, name in ENV_KEYS.items():
        value, where = config.get("direct", key, default=None), config.where(("direct", key))
        if value is None or from_defaults(where) or from_launcher_file(where) or name in environ or name in named:
            continue
        found.append(f"{name}={value}")
    return found
