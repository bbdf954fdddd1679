"""The launcher's ``dry_run`` and ``debug`` switches: set in any of its sections (``main``,
``container``, ``slurm``, ``direct``), each acts as the command-line flag for every command."""

from __future__ import annotations

LAUNCHER_SECTIONS = ("main", "container", "slurm", "direct")


def launcher_switch(config, key: str) -> bool:
    """``dry_run`` or ``debug`` set true in any launcher section of the merged config."""
    return any(config.get(section, key, default=False) is True for section in LAUNCHER_SECTIONS)


def where_set(config, key: str) -> str | None:
    """The ``file:line`` of the first section that sets ``key`` (for the dry run's notice)."""
    for section in LAUNCHER_SECTIONS:
        if config.get(section, key, default=False) is True:
            return config.where((section, key)) or f"{section}.{key}"
    return None
