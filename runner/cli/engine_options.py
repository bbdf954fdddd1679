"""An engine's own options, declared as data (``runner.engines.base.Option``, TorchX's runopts),
turned into argparse here and nowhere else: an engine never sees a parser or a namespace."""

from __future__ import annotations

import argparse
from typing import Iterable

_TYPES = {"int": int, None: None}


def declare(parser: argparse.ArgumentParser, options: Iterable, command: str) -> None:
    """Add each option declared for ``command`` to its parser, in its help group (long forms only
    on a command that does not take its short ones)."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for option in options:
        if command not in option.commands:
            continue
        flags = option.flags if command in option.short_on else tuple(f for f in option.flags if f.startswith("--"))
        if not flags:
            continue
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(option.group) if option.group else parser
        kwargs: dict = {"help": option.help}
        if option.dest:
            kwargs["dest"] = option.dest
        if option.switch:
            kwargs["action"] = "store_true"
        else:
            kwargs.update(metavar=option.metavar, type=_TYPES[option.type])
        groups[option.group].add_argument(*flags, **kwargs)


def flag_strings(options: Iterable, command: str) -> set[str]:
    """Every flag the declared options put on ``command`` (for "an option of the slurm engine")."""
    probe = argparse.ArgumentParser(add_help=False)
    declare(probe, options, command)
    return {flag for action in probe._actions for flag in action.option_strings}
