"""Engines: each turns a ``LaunchPlan`` into its own request and runs it (``base.Engine``).

``docker`` (Docker and Podman through one Engine API client) and ``slurm``
(one container per node through a node agent). ``engine_for`` is the registry.
"""

from __future__ import annotations


def engine_for(name: str):
    """The engine named ``name``; imported on demand so a command loads only its own."""
    if name == "docker":
        from runner.engines.docker import DockerEngine

        return DockerEngine()
    if name == "slurm":
        from runner.engines.slurm import SlurmEngine

        return SlurmEngine()
    if name == "process":  # direct mode: a child process on this host, no container
        from runner.engines.process import ProcessEngine

        return ProcessEngine()
    raise ValueError(f"unknown engine {name!r}")


def config_problems(config) -> list:
    """Every engine's own config section checked as its launch would check it (``plan``, ``check``
    and every dry run report the same problems, with ``file:line``, before anything exists)."""
    from runner.engines.slurm.script import settings_from
    from runner.errors import ConfigError
    from runner.options import SlurmFlags

    try:
        settings_from(config, SlurmFlags())
    except ConfigError as exc:
        return list(exc.problems)
    return []
