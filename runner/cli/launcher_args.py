"""The launcher's modes parsed as the Primus launcher parses them (``runner/primus-cli*.sh``).

argparse cannot take what the launcher takes: ``container`` hands any ``--NAME VALUE`` or
boolean ``--NAME`` to ``docker run``; ``slurm`` hands every flag before the first ``--`` to
Slurm unchanged; ``direct`` hands its options to the direct launcher. So these three
modes are read here, token by token, with the launcher's own rules:

- ``container [OPTIONS] [-- [DIRECT OPTIONS --]] PRIMUS ARGS``: an option's value is the
  next token unless that starts with ``--``; the first word that is not an option starts
  the Primus args (the launcher needs no ``--`` there). After ``--``, the direct
  launcher's options (``--log_file``, ``--env``, ``--patch`` …) up to a second ``--`` are
  the direct launcher's, as the README's ``-- --image X -- --env K=V -- train …`` means.
- ``slurm [srun|sbatch] [SLURM FLAGS] -- [container|direct [OPTIONS] --] PRIMUS ARGS``:
  ``--config``, ``--debug`` and ``--dry-run`` anywhere before the first ``--`` are the
  launcher's; every other token goes to Slurm as given.
- ``direct [OPTIONS] -- PRIMUS ARGS``: ``--env NAME`` / ``--env NAME=VALUE`` go through the
  runner's env policy; every other option reaches ``primus-cli-direct.sh`` unchanged.

The runner's global options (``--json``, ``--config``, ``--env-file``, ``--no-color``,
``--verbose``, ``--trust-project``, ``-q``) are taken wherever they stand before the first ``--``.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, replace
from typing import Callable

from runner.ui import launcher_text
from runner.engines.docker import run_options
from runner.errors import UsageError

MODES = ("container", "direct", "slurm")
_GLOBAL_BOOL = {"--json": "json", "--no-color": "no_color", "--verbose": "verbose", "--trust-project": "trust_project",
                "--quiet": "quiet", "-q": "quiet"}
_GLOBAL_VALUE = {"--config": "config", "--env-file": "env_file"}
_TOP_FLAGS = {"--dry-run", "--debug", *_GLOBAL_BOOL}

# The direct launcher's own options (runner/primus-cli-direct.sh): with a value, and without.
DIRECT_VALUE = ("--env", "--script", "--log_file", "--patch", "--config")
DIRECT_FLAG = ("--single", "--numa", "--no-numa", "--debug", "--dry-run")
# Options docker run does not have that the Primus docs pass to `container` meaning the direct
# launcher's (`container --log_file /tmp/x.log -- train …`): given the meaning the docs intend.
_DIRECT_IN_CONTAINER = {"log_file", "script", "patch", "single", "numa", "no-numa"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class ModeArgs:
    """One launcher-mode invocation as the launcher reads it (names only; nothing resolved)."""

    mode: str
    globals: dict = field(default_factory=dict)  # the runner's global options found among the mode's tokens
    dry_run: bool = False  # the mode's own --dry-run (slurm: anywhere before the first --)
    debug: bool = False
    clean: bool = False
    all_users: bool = False
    options: list = field(default_factory=list)  # container: (name, value or None) as given, long names
    env: list = field(default_factory=list)  # --env NAME / NAME=VALUE (container, direct)
    direct_args: list = field(default_factory=list)  # for primus-cli-direct.sh, before its --
    primus_args: list = field(default_factory=list)
    launcher: str = "srun"
    slurm_args: list = field(default_factory=list)  # slurm: every flag before the first --, as given
    entry: str = "container"


def _past_globals(argv: list[str], i: int = 0) -> int:
    """The index of the first token from ``i`` on that is not a runner global option."""
    while i < len(argv):
        token = argv[i]
        if token in _GLOBAL_VALUE:
            i += 2
            continue
        if token in _TOP_FLAGS or token.startswith(("--config=", "--env-file=")):
            i += 1
            continue
        break
    return i


def split_mode(argv: list[str]) -> tuple[list[str], str, list[str]] | None:
    """(the global options before it, the mode, its tokens) when ``argv`` runs a launcher mode
    other than for its help; None otherwise (argparse takes it)."""
    i = _past_globals(argv)
    if i >= len(argv) or argv[i] not in MODES:
        return None
    rest = argv[i + 1:]
    before = rest[:rest.index("--")] if "--" in rest else rest
    if any(t in ("-h", "--help") for t in before):
        return None
    return argv[:i], argv[i], rest


def parse_mode_help(parser, argv: list[str]):
    """A launcher mode's ``--help``, answered as the launcher answers it: a ``--config`` file that
    is not there is an error first (the launcher loads its config before anything), and the
    ``--debug``/``--dry-run`` given are acknowledged after the help, in the launcher's words."""
    before = argv[:argv.index("--")] if "--" in argv else argv
    found: dict = {}
    try:
        for i in range(len(before)):
            _take_global(before, i, found)
    except UsageError:
        pass  # a --config without its file: argparse says so below
    config = found.get("config")
    if config and not os.path.isfile(os.path.expanduser(config)):
        parser.error(f"config file not found: {config} (check the path, or leave --config out)")
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code == 0:  # the help was printed
            for given, line in (("--debug", launcher_text.DEBUG_LINE), ("--dry-run", launcher_text.DRY_RUN_LINE)):
                if given in before:
                    print(line, file=sys.stderr)
        raise


def default_launcher(argv: list[str]) -> list[str]:
    """``slurm`` without ``srun``/``sbatch`` means ``srun``, as in primus-cli."""
    i = _past_globals(argv)
    if i >= len(argv) or argv[i] != "slurm":
        return argv
    j = _past_globals(argv, i + 1)
    if j < len(argv) and argv[j] in ("srun", "sbatch", "-h", "--help"):
        return argv
    return argv[:i + 1] + ["srun"] + argv[i + 1:]


def _take_global(tokens: list[str], i: int, found: dict) -> int:
    """Consume a runner global option at ``tokens[i]``; the next index (``i`` when it is none)."""
    token = tokens[i]
    if token in _GLOBAL_BOOL:
        found[_GLOBAL_BOOL[token]] = True
        return i + 1
    name, eq, value = token.partition("=")
    if name in _GLOBAL_VALUE:
        if eq:
            found[_GLOBAL_VALUE[name]] = value
            return i + 1
        if i + 1 >= len(tokens):
            raise UsageError(f"{name} needs a value", hint=f"{name} FILE")
        found[_GLOBAL_VALUE[name]] = tokens[i + 1]
        return i + 2
    return i


def _walk(tokens: list[str], args: ModeArgs, after_dashes: Callable[[ModeArgs, list[str]], None],
          step: Callable[[int], int | None], own: tuple[str, ...] = ()) -> bool:
    """A mode's words, read as every mode reads them: at ``--`` the rest goes to
    ``after_dashes``; a runner global option is taken wherever it stands (except the mode's
    ``own`` options); any other word goes to ``step(i)``, which returns the next index, or
    None to stop there. True when ``--`` was met."""
    i = 0
    while i < len(tokens):
        if tokens[i] == "--":
            after_dashes(args, tokens[i + 1:])
            return True
        j = _take_global(tokens, i, args.globals) if tokens[i] not in own else i
        if j == i:
            j = step(i)
            if j is None:
                return False
        i = j
    return False


def parse(mode: str, tokens: list[str]) -> ModeArgs:
    return {"container": parse_container, "direct": parse_direct, "slurm": parse_slurm}[mode](list(tokens))


# --------------------------------------------------------------------------- container
def _option(tokens: list[str], i: int) -> tuple[str, str | None, int]:
    """``--NAME=VALUE``, ``--NAME VALUE`` or boolean ``--NAME`` (and docker's short forms) at ``i``."""
    token = tokens[i]
    if token.startswith("--"):
        name, eq, value = token[2:].partition("=")
        if eq:
            return name, value, i + 1
    else:  # -v /a:/b, -e NAME, -d … (docker's short forms; -vX glued too)
        short = token[1:2]
        if short not in run_options.SHORT:
            raise UsageError(f"{token}: not a docker run option the runner knows", hint="use the long form, e.g. --volume")
        name = run_options.SHORT[short]
        if len(token) > 2:
            return name, token[2:].lstrip("="), i + 1
    name = run_options.ALIASES.get(name, name)
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    if name in run_options.BOOLEAN or name in ("single", "numa", "no-numa", "clean", "all-users", "debug", "dry-run"):
        if nxt in ("true", "false", "True", "False"):
            return name, nxt.lower(), i + 2
        return name, None, i + 1
    if nxt is None or nxt.startswith("--"):  # the launcher: a flag followed by a flag (or nothing) is boolean
        return name, None, i + 1
    return name, nxt, i + 2


def parse_container(tokens: list[str]) -> ModeArgs:
    args = ModeArgs("container")

    def step(i: int) -> int | None:
        token = tokens[i]
        if not token.startswith("-") or token == "-":
            args.primus_args = tokens[i:]  # the launcher: the first word that is no option starts the Primus args
            return None
        name, value, i = _option(tokens, i)
        if name == "dry-run":
            args.dry_run = value != "false"
        elif name == "debug":
            args.debug = value != "false"
        elif name == "clean":
            args.clean = value != "false"
        elif name == "all-users":
            args.all_users = value != "false"
        elif name == "env":
            args.env.append(_required(name, value))
        elif name in _DIRECT_IN_CONTAINER:
            args.direct_args += [f"--{name}"] + ([] if value is None else [value])
        else:
            args.options.append((name, value))
        return i

    _walk(tokens, args, _after_container, step)
    return args


def _after_container(args: ModeArgs, rest: list[str]) -> None:
    """What follows ``container``'s ``--``: the direct launcher's options up to its own ``--``
    (or up to the first word that is not one of them), then the Primus args."""
    i = 0
    while i < len(rest):
        token = rest[i]
        if token == "--":
            args.primus_args = rest[i + 1:]
            return
        name = token.partition("=")[0]
        if name in DIRECT_VALUE and (token != name or i + 1 < len(rest)):
            value = token.partition("=")[2] if token != name else rest[i + 1]
            if name == "--env" and _is_env_entry(value):
                args.env.append(value)
            else:
                args.direct_args += [name, value]
            i += 1 if token != name else 2
            continue
        if token in DIRECT_FLAG:
            args.direct_args.append(token)
            i += 1
            continue
        break
    args.primus_args = rest[i:]


def _required(name: str, value: str | None) -> str:
    if value is None:
        raise UsageError(f"--{name} needs a value", hint=f"--{name} VALUE")
    return value


def _is_env_entry(value: str) -> bool:
    """``NAME`` or ``NAME=VALUE`` (the runner's env policy); anything else is an env file of the direct launcher."""
    return bool(_NAME.match(value.partition("=")[0]))


# --------------------------------------------------------------------------- direct
def parse_direct(tokens: list[str]) -> ModeArgs:
    """Every option before ``--`` reaches the direct launcher as given, except ``--env NAME[=VALUE]``
    (forwarded under the env policy) and ``--debug`` (PRIMUS_LOG_LEVEL=DEBUG). As the direct
    launcher does, the first word that is not an option starts the Primus args."""
    args = ModeArgs("direct")

    def step(i: int) -> int | None:
        token = tokens[i]
        name, eq, inline = token.partition("=")
        if name in DIRECT_VALUE:
            if not eq and i + 1 >= len(tokens):
                raise UsageError(f"{name} needs a value", hint=f"{name} VALUE")
            value = inline if eq else tokens[i + 1]
            if name == "--config":
                args.globals["config"] = value
            elif name == "--env" and _is_env_entry(value):
                args.env.append(value)
            else:
                args.direct_args += [name, value]
            return i + (1 if eq else 2)
        if token == "--debug":
            args.debug = True
        elif token == "--dry-run":
            args.dry_run = True  # the direct launcher's own dry run: it prints what it would run, runs nothing
            args.direct_args.append(token)
        elif token.startswith("-"):
            args.direct_args.append(token)  # --silent … : the direct launcher's, unchanged
        else:
            args.primus_args = tokens[i:]
            return None
        return i + 1

    _walk(tokens, args, lambda a, rest: setattr(a, "primus_args", rest), step, own=("--config",))
    return args


# --------------------------------------------------------------------------- slurm
def parse_slurm(tokens: list[str]) -> ModeArgs:
    args = ModeArgs("slurm")
    launcher_seen = False

    def step(i: int) -> int:
        nonlocal launcher_seen
        token = tokens[i]
        if token == "--dry-run":
            args.dry_run = True
        elif token == "--debug":
            args.debug = True
        elif token in ("srun", "sbatch") and not launcher_seen and not args.slurm_args:
            args.launcher = token
            launcher_seen = True
        else:
            args.slurm_args.append(token)
        return i + 1

    if not _walk(tokens, args, _slurm_entry, step):
        raise UsageError("slurm needs -- and then the Primus args (or an entry: container|direct … --)",
                         hint="primus-runner slurm srun -N 2 -- train pretrain --config exp.yaml")
    return args


def _slurm_entry(args: ModeArgs, rest: list[str]) -> None:
    """The launcher routes anything that is not ``container``/``direct`` through the container entry."""
    if rest and rest[0] in ("container", "direct"):
        args.entry = rest[0]
        inner = parse(rest[0], rest[1:])
    else:
        inner = parse_container(rest)
    for key in ("options", "env", "direct_args", "primus_args"):
        setattr(args, key, getattr(inner, key))
    args.globals.update(inner.globals)
    args.debug = args.debug or inner.debug
    if args.entry == "container" and inner.dry_run:
        args.dry_run = True
    if inner.clean:
        raise UsageError("--clean is not for Slurm jobs (it would remove containers on the submitting host)",
                         hint="run primus-runner down --all on the nodes, or cancel the job")
    if args.entry == "direct":
        args.direct_args = inner.direct_args


def with_entry(args: ModeArgs, **changes) -> ModeArgs:
    return replace(args, **changes)
