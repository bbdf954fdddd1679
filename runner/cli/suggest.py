"""Usage errors that teach: argparse's messages with a did-you-mean, hidden commands left out.

argparse says ``invalid choice: 'chek' (choose from …, 'node-agent')`` and
``unrecognized arguments: --gpuu rocm`` with the top-level usage; these turn
each into one line naming the closest real command or flag of the command in use.
"""

from __future__ import annotations

import argparse
import difflib
import re

from runner.ui import launcher_text

HIDDEN_COMMANDS = ("node-agent", "__complete")  # for srun on each Slurm node, and for the completion scripts

# The words of docker and Slurm users: (whose word it is, the command it means here).
HABITS = {
    **{word: ("docker", "up") for word in ("run", "start", "create")},
    **{word: ("docker", "down") for word in ("stop", "rm", "kill")},
    "ls": ("docker", "ps"), "attach": ("docker", "logs -f"), "inspect": ("docker", "runs show"),
    "sbatch": ("Slurm", "submit"), "srun": ("Slurm", "slurm srun"), "squeue": ("Slurm", "ps --engine slurm"),
    "scancel": ("Slurm", "cancel"), "sacct": ("Slurm", "status"),
}

_INVALID_CHOICE = re.compile(r"^argument (?P<arg>[^:]+): invalid choice: '(?P<value>.*)' \(choose from .*\)$", re.S)
_UNRECOGNIZED = re.compile(r"^unrecognized arguments: (?P<args>.*)$", re.S)


def visible_commands(parser: argparse.ArgumentParser) -> list[str]:
    """The commands a person may type (the hidden ones left out), in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return [name for name in action.choices if name not in HIDDEN_COMMANDS]
    return []


def subcommand(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name) if name else None
    return None


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    return [s for action in parser._actions for s in action.option_strings if action.help != argparse.SUPPRESS]


def closest(word: str, candidates: list[str]) -> str | None:
    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def explain(message: str, parser: argparse.ArgumentParser, command_parser: argparse.ArgumentParser | None) -> tuple[str, str | None]:
    """(message, hint) for one of argparse's errors; other messages pass through unchanged."""
    choice = _INVALID_CHOICE.match(message)
    if choice:
        value, arg = choice["value"], choice["arg"]
        if arg == "COMMAND":
            names = visible_commands(parser)
            if value in HABITS and HABITS[value][1].split()[0] in names:
                tool, meant = HABITS[value]
                return (f"unknown command '{value}': did you mean '{meant}'?",
                        f"{tool}'s {value} is primus-runner {meant} here (primus-runner {meant.split()[0]} --help)")
            guess = closest(value, names)
            return (launcher_text.unknown_mode(value) + (f": did you mean '{guess}'?" if guess else ""),
                    f"commands: {', '.join(names)} (primus-runner --help)")
        choices = _choices_of(command_parser or parser, arg)
        guess = closest(value, choices)
        return (f"argument {arg}: '{value}' is not one of {', '.join(choices) or 'the choices'}"
                + (f": did you mean '{guess}'?" if guess else ""), None)
    unknown = _UNRECOGNIZED.match(message)
    if unknown:
        words = unknown["args"].split()
        flags = [w.split("=", 1)[0] for w in words if w.startswith("-")]
        known = option_strings(command_parser) if command_parser is not None else []
        known += [s for s in option_strings(parser) if s not in known]
        owner = next(((f, e) for f in flags if (e := _engine_declaring(f, command_parser))), None)
        if owner:  # `up --nodes 2`: an option of one engine, asked of the default engine
            flag, engine = owner
            command = command_parser.prog.split(maxsplit=1)[-1]
            return (f"'{flag}' is an option of the {engine} engine, and {command} launches on another one",
                    f"name the engine: primus-runner {command} --engine {engine} {flag} …")
        for flag in flags:
            guess = closest(flag, known)
            if guess:
                return f"unknown option '{flag}': did you mean '{guess}'?", _help_hint(command_parser)
        if flags:
            return f"unknown option '{flags[0]}'", _help_hint(command_parser)
        return (f"unexpected argument{'s' if len(words) > 1 else ''}: {unknown['args']}",
                "put the job's command after --, e.g. primus-runner up -- python train.py")
    return message, None


def _engine_declaring(flag: str, command_parser: argparse.ArgumentParser | None) -> str | None:
    """The engine whose own options for this command include ``flag`` (each engine's ``options()``)."""
    if command_parser is None:
        return None
    from runner.cli.engine_options import flag_strings
    from runner.engines import ENGINES, engine_for

    command = command_parser.prog.split(maxsplit=1)[-1]
    return next((name for name in ENGINES if flag in flag_strings(engine_for(name).options(), command)), None)


def with_help(hint: str | None, prog: str) -> str:
    """The fix of a usage error, always naming where the whole usage is (``COMMAND --help``)."""
    if not hint:
        return f"{prog} --help lists its usage"
    return hint if "--help" in hint else f"{hint} ({prog} --help)"


def _help_hint(command_parser: argparse.ArgumentParser | None) -> str:
    return f"{command_parser.prog} --help lists its options" if command_parser is not None else "primus-runner --help"


def _choices_of(parser: argparse.ArgumentParser, arg: str) -> list[str]:
    for action in parser._actions:
        names = set(action.option_strings) | {str(action.metavar), action.dest}
        if action.choices and any(n in names for n in arg.split("/")):
            return [str(c) for c in action.choices]
    return []
