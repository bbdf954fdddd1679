"""An engine's options declared as data (``Option``), turned into argparse (``runner.cli.engine_options``):
on the commands each names, short forms only where asked, in their help group, typed."""

from __future__ import annotations

import argparse

import pytest

from runner.cli.engine_options import declare, flag_strings
from runner.engines.base import Option

OPTIONS = (
    Option(("-N", "--nodes"), "node count", ("submit", "up"), type="int", metavar="N", group="Slurm job", short_on=("submit",)),
    Option(("--exclusive",), "whole nodes", ("submit",), switch=True, group="Slurm job"),
    Option(("--toy-speed",), "how fast", ("up",), dest="speed", metavar="S"),
    Option(("-x",), "short only", ("up",)),  # no long form: nothing on a command that takes no short ones
)


def _parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    declare(parser, OPTIONS, command)
    return parser


def test_each_option_on_the_commands_it_names_short_forms_where_asked():
    assert flag_strings(OPTIONS, "submit") == {"-N", "--nodes", "--exclusive"}
    assert flag_strings(OPTIONS, "up") == {"--nodes", "--toy-speed"}
    assert flag_strings(OPTIONS, "ps") == set()


def test_values_are_typed_switches_take_none_and_dest_is_kept():
    parsed = _parser("submit").parse_args(["-N", "3", "--exclusive"])
    assert (parsed.nodes, parsed.exclusive) == (3, True)
    parsed = _parser("up").parse_args(["--nodes", "2", "--toy-speed", "fast"])
    assert (parsed.nodes, parsed.speed) == (2, "fast")


def test_a_value_of_the_wrong_type_is_refused():
    with pytest.raises(argparse.ArgumentError) as err:
        _parser("submit").parse_args(["-N", "two"])
    assert "invalid int value: 'two'" in str(err.value)


def test_the_options_are_listed_in_their_help_group():
    shown = _parser("submit").format_help()
    assert "Slurm job:\n  -N N, --nodes N  node count\n  --exclusive      whole nodes" in shown
