"""Typed options: what the command line asked for, as small frozen dataclasses.

``runner.cli`` turns argparse's namespace into these; nothing below the CLI
knows argparse exists. Each command takes only the dataclass it needs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sources:
    """Where configuration and values come from (the global options)."""

    config_file: str | None = None
    env_file: str | None = None


@dataclass(frozen=True)
class BuildOptions:
    """``primus-runner build`` (and the build behind ``up --build``)."""

    sources: Sources = Sources()
    flavor: str | None = None
    base: str | None = None
    tag: str | None = None
    build_args: tuple[str, ...] = ()
    no_cache: bool = False
    dry_run: bool = False
    secrets: tuple[str, ...] = ()  # names exposed to RUN --mount=type=secret,id=NAME
    file: str | None = None  # a user's Dockerfile instead of images/<flavor>/
    context: str | None = None
    pull: str | None = None  # missing | always | never
