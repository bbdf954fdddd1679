"""Which module runs each command, and the typed arguments it gets (poetry's shape: loaded by name).

``COMMANDS`` maps a command to the module and function that run it, imported only when that
command runs, and to the function that turns argparse's namespace into its typed arguments
(``runner.options``): below the CLI nothing sees the namespace.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from argparse import Namespace

    from runner.options import LaunchFlags, RunOptions, Selection, Sources
    from runner.ui import Output


def flags(args: "Namespace") -> "LaunchFlags":
    """The LAUNCH options as given."""
    from runner.engines import implied_container_engine
    from runner.options import LaunchFlags

    return LaunchFlags(
        image=args.image, env=tuple(args.env), volume=tuple(args.volume), device=tuple(args.device), gpu=args.gpu,
        gpus=args.gpus, name=args.name, workdir=args.workdir, shm_size=args.shm_size, memory=args.memory, cpus=args.cpus,
        network=args.network, ipc=args.ipc, user=args.user, pull=getattr(args, "pull", None),
        entrypoint=args.entrypoint, labels=tuple(args.label), platform=args.platform,
        container_engine=implied_container_engine(getattr(args, "engine", None)),
    )


def engine_flags(args: "Namespace", command: str) -> tuple:
    """(engine name, its typed flags) for each engine that read its own from the parsed values
    (``cli_flags``: a plain mapping, never the namespace)."""
    from runner.cli.parser import option_engines
    from runner.engines import engine_for

    found = []
    values = vars(args)
    for name in option_engines(command, getattr(args, "engine", None)):
        parsed = engine_for(name).cli_flags(values, command)
        if parsed is not None:
            found.append((name, parsed))
    return tuple(found)


def _dry_run(args: "Namespace") -> bool:
    """The global ``--dry-run`` or the command's own (a launcher section's ``dry_run: true`` is the command's to read)."""
    return args.global_dry_run or getattr(args, "dry_run", False)


def _run_options(args: "Namespace", sources: "Sources") -> "RunOptions":
    from runner.options import RunOptions

    return RunOptions(
        command=tuple(args.command), sources=sources, flags=flags(args), dry_run=_dry_run(args),
        detach=args.detach if args.cmd == "up" else (args.cmd == "submit" and not args.wait),
        keep=getattr(args, "keep", False), build=getattr(args, "build", False), audit=getattr(args, "audit", False),
        report=getattr(args, "report", None), engine_flags=engine_flags(args, args.cmd), pull=getattr(args, "pull", None),
        debug=args.global_debug, interactive=getattr(args, "interactive", False), tty=getattr(args, "tty", False),
    )


def _launch(args, sources) -> dict:
    return {"options": _run_options(args, sources), "engine": getattr(args, "engine", None)}


def _shell(args, sources) -> dict:
    return {"options": _run_options(args, sources)}


def _check(args, sources) -> dict:
    from runner.engines import DEFAULT
    from runner.options import CheckOptions

    return {"opts": CheckOptions(tuple(args.command), sources, flags(args), args.engine or DEFAULT, args.online, args.timeout)}


def _selection(args, sources) -> dict:
    """What an engine verb acts on: the names or the job id, and the command's own switches."""
    from runner.options import Selection

    names = tuple(filter(None, (getattr(args, key, None) for key in ("name", "job")))) or tuple(getattr(args, "names", ()))
    selection: Selection = Selection(
        sources, names, getattr(args, "all", False), getattr(args, "follow", False), all_users=getattr(args, "all_users", False),
        tail=getattr(args, "tail", None), dry_run=args.cmd in ("down", "cancel") and _dry_run(args), node=getattr(args, "node", None),
        command=tuple(getattr(args, "command", ())), engine=args.engine)
    return {"selection": selection}


def _build(args, sources) -> dict:
    from runner.options import BuildOptions

    return {"options": BuildOptions(
        sources=sources, flavor=args.flavor, base=args.base, tag=args.tag, build_args=tuple(args.build_arg),
        no_cache=args.no_cache, dry_run=_dry_run(args), secrets=tuple(args.secret), file=args.file, context=args.context,
        pull=args.pull, push=args.push)}


def _runs(args, sources) -> dict:
    if args.runs_cmd == "show":
        return {"action": "show", "run_id": args.run}
    if args.runs_cmd == "gc":
        return {"action": "gc", "older_than": args.older_than, "dry_run": args.dry_run or args.global_dry_run}
    return {"action": "list", "all_users": args.all, "limit": args.limit, "state": args.state, "engine": args.runs_engine,
            "name": args.runs_name}


def _mode(args, sources) -> dict:
    from runner.cli.launcher_translate import mode_options

    return {"opts": mode_options(args.mode_args, sources, args.global_dry_run, args.global_debug)}


# name -> (module, its function, the function giving its keyword arguments); every function is
# called as function(out=out, **arguments) and returns the exit code.
COMMANDS: dict[str, tuple[str, str, Callable[[Any, Any], dict]]] = {
    "check": ("runner.commands.check", "run_check", _check),
    "plan": ("runner.commands.plan", "run", _launch),
    "up": ("runner.commands.up", "run", _launch),
    "submit": ("runner.commands.submit", "run", _launch),
    "shell": ("runner.commands.shell", "run", _shell),
    "ps": ("runner.commands.ps", "run", _selection),
    "logs": ("runner.commands.logs", "run", _selection),
    "exec": ("runner.commands.exec", "run", lambda args, sources: {
        "name": args.name, "words": list(args.command), "sources": sources, "interactive": args.interactive, "tty": args.tty,
        "all_users": args.all_users, "engine": args.engine}),
    "down": ("runner.commands.down", "run", _selection),
    "status": ("runner.commands.status", "run", _selection),
    "cancel": ("runner.commands.cancel", "run", _selection),
    "runs": ("runner.commands.runs", "run", _runs),
    "build": ("runner.commands.build", "run", _build),
    "audit": ("runner.commands.audit", "cmd_audit", lambda args, sources: {"targets": tuple(args.targets), "sources": sources}),
    "trust": ("runner.commands.trust", "cmd_trust", lambda args, sources: {"sources": sources, "show": args.show, "revoke": args.revoke}),
    "demo": ("runner.commands.demo", "cmd_demo", lambda args, sources: {"sources": sources}),
    "node-agent": ("runner.commands.node_agent", "run", lambda args, sources: {"plan_file": args.plan_file, "cleanup": args.cleanup}),
    # The command line's own: its completion scripts, generated from its parser, and the names they complete.
    "completion": ("runner.cli.dispatch", "completion", lambda args, sources: {"shell": args.shell}),
    "__complete": ("runner.cli.complete_names", "run", lambda args, sources: {"kind": args.kind}),
    # The Primus launcher's modes, parsed as the launcher parses them (runner.cli.launcher_args), then run.
    "container": ("runner.commands.launcher", "run", _mode),
    "direct": ("runner.commands.launcher", "run", _mode),
    "slurm": ("runner.commands.launcher", "run", _mode),
}


def completion(out: "Output", *, shell: str) -> int:
    """``completion SHELL``: the script, generated from every command's arguments."""
    import sys

    from runner.cli.completion import script
    from runner.cli.parser import build_parser

    sys.stdout.write(script(shell, build_parser()))
    sys.stdout.flush()
    return 0


def dispatch(args: "Namespace", sources: "Sources", out: "Output") -> int:
    """Run the command ``args`` names: its module imported now, its function given its typed arguments."""
    module, function, arguments = COMMANDS[args.cmd]
    return getattr(importlib.import_module(module), function)(out=out, **arguments(args, sources))
