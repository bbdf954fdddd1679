"""Engines: each turns a ``LaunchPlan`` into its own request and runs it (``base.Engine``).

``docker`` (Docker and Podman through one Engine API client), ``slurm`` (one
container per node through a node agent), ``process`` (a child process on this
host, the launcher's direct mode). ``ENGINES`` is the registry: a new engine is
one module and one line here (the checklist is in docs/architecture.md).
"""

from __future__ import annotations

import importlib

# name -> (module, class); imported on demand so a command loads only its own engine.
ENGINES: dict[str, tuple[str, str]] = {
    "docker": ("runner.engines.docker", "DockerEngine"),
    "slurm": ("runner.engines.slurm.engine", "SlurmEngine"),
    "process": ("runner.engines.process", "ProcessEngine"),
}


def engine_for(name: str):
    """The engine named ``name``."""
    try:
        module, cls = ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r} (known: {', '.join(ENGINES)})") from None
    return getattr(importlib.import_module(module), cls)()


def config_problems(config) -> list:
    """Every engine's own config section checked as its launch would check it (``plan``, ``check``
    and every dry run report the same problems, with ``file:line``, before anything exists)."""
    from runner.resources import policies_dir

    defaults = str(policies_dir() / "defaults.yaml")
    if not any(key[:1] == ("slurm",) and not (where or "").startswith(defaults) for key, where in config.lines.items()):
        return []  # the built-in slurm: section only: nothing of the user's to check (and no Slurm module to load)
    from runner.engines.slurm.script import settings_from
    from runner.errors import ConfigError
    from runner.options import SlurmFlags

    try:
        settings_from(config, SlurmFlags())
    except ConfigError as exc:
        return list(exc.problems)
    return []
