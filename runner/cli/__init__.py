"""The command line: every flag is parsed here, every error becomes its exit code here.

Commands do their work in their own modules; this file only parses, dispatches
and maps exceptions to the contract's exit codes (0 ok, 1 engine unavailable,
2 usage/config, 3 run-time failure, 4 leak found; a job's own code once it ran).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Sequence

from runner import __version__

if TYPE_CHECKING:  # the CLI imports its modules inside main(), so `--version` starts fast
    from runner.ui import Output


def _flags(args):
    from runner.options import LaunchFlags

    return LaunchFlags(
        image=args.image, env=tuple(args.env), volume=tuple(args.volume), device=tuple(args.device), gpu=args.gpu,
        gpus=args.gpus, name=args.name, workdir=args.workdir, shm_size=args.shm_size, memory=args.memory, cpus=args.cpus,
        network=args.network, ipc=args.ipc, user=args.user, pull=getattr(args, "pull", None),
        entrypoint=args.entrypoint, labels=tuple(args.label), platform=args.platform,
    )


def _engine_flags(args, command: str) -> tuple:
    """(engine name, its typed flags) for each engine that read its own from the parsed values
    (``cli_flags``: a plain mapping, never the namespace)."""
    from runner.cli.parser import option_engines
    from runner.engines import engine_for

    found = []
    values = vars(args)
    for name in option_engines(command, getattr(args, "engine", None)):
        flags = engine_for(name).cli_flags(values, command)
        if flags is not None:
            found.append((name, flags))
    return tuple(found)


def _launch_engine(args, default: str | None = None):
    """The engine a launch runs on: ``--engine``, else ``default``, else the registry's default; an
    option of ``up`` the engine does not honour (``--keep`` for Slurm) is a usage error (exit 2)."""
    from runner.engines import DEFAULT, engine_named
    from runner.errors import UsageError

    engine = engine_named(getattr(args, "engine", None) or default or DEFAULT)
    taken = engine.launch_options
    refused = [flag for key, flag in (("keep", "--keep"), ("build", "--build"), ("interactive", "-i"), ("tty", "-t"))
               if getattr(args, key, False) and key not in taken]
    if refused:
        raise UsageError(f"the {engine.name} engine does not take {', '.join(refused)}",
                         hint=f"drop {'them' if len(refused) > 1 else 'it'}, or launch with --engine {DEFAULT}")
    return engine


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # the fast path: no parser, no imports
        print(f"primus-runner {__version__}")
        return 0
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C while still starting up (imports, parsing): 130, no traceback
        print("error: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str]) -> int:
    from runner.errors import RunnerError
    from runner.options import Sources
    from runner.ui import Output

    parser, args = _parse(argv)
    sources = Sources(args.config, args.env_file, args.trust_project)
    out = Output(json_mode=args.json, color=not args.no_color, verbose=args.verbose, fallback=_early_masker(args.cmd, sources),
                 quiet=args.quiet)
    if not args.cmd:
        parser.print_help(sys.stderr)
        return 2
    try:
        from runner.context import early_masks

        early_masks(args.cmd, sources, args.json, out)  # under CI: ::add-mask:: first, before anything can fail and print
        return _dispatch(args, sources, out, parser) or 0
    except RunnerError as exc:
        from runner.ui import ci
        from runner.errors import ConfigError

        if isinstance(exc, ConfigError) and ci.report_problems(exc.problems, out.masker):
            if exc.hint:  # each problem is an ::error file=…,line=…:: annotation
                out.info(f"  fix: {exc.hint}")
        else:
            out.error(exc.message, exc.hint)
        return exc.exit_code
    except KeyboardInterrupt:
        out.error("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: say so plainly; the traceback (masked) only with --verbose
        if args.verbose:
            import traceback

            out.info(traceback.format_exc())
        out.error(f"internal error: {type(exc).__name__}: {exc}", "rerun with --verbose and report it")
        return 3


def _early_masker(command: str | None, sources):
    """The masker for messages printed before a command installs its own (``down NAME``,
    ``status``, a schema error quoting a flag's value): the early secret scope. Built
    lazily, on the first message only. Not for ``completion`` (a script, no secrets in
    it) nor the node agent (its plan's scope)."""
    if command in ("completion", "node-agent", "__complete"):
        return None

    def build():
        from runner.context import early_scope

        return early_scope(sources).masker

    return build


def _run_options(args, sources):
    from runner.options import RunOptions

    return RunOptions(
        command=tuple(args.command), sources=sources, flags=_flags(args), dry_run=getattr(args, "dry_run", False) or args.global_dry_run,
        detach=args.detach if args.cmd == "up" else (args.cmd == "submit" and not args.wait),
        keep=getattr(args, "keep", False), build=getattr(args, "build", False), audit=getattr(args, "audit", False),
        report=getattr(args, "report", None), engine_flags=_engine_flags(args, args.cmd), pull=getattr(args, "pull", None), debug=args.global_debug,
        interactive=getattr(args, "interactive", False), tty=getattr(args, "tty", False),
    )


_LAUNCHER_MODES = ("container", "direct", "slurm")  # launcher_args.MODES, known without importing it


def _parse(argv: list[str]):
    """(the parser, the namespace): the parser of the command ``argv`` names."""
    from runner.cli.parser import build_parser, scout

    scouted = scout(argv)
    parser = build_parser(scouted)
    return parser, _parse_with(parser, argv, scouted.command)


def _parse_with(parser: argparse.ArgumentParser, argv: list[str], command: str | None):
    """argparse for the runner's own commands; the launcher's modes as the launcher parses them
    (``runner.cli.launcher_args``: docker run options, Slurm flags, direct options as given)."""
    if command not in _LAUNCHER_MODES:
        return parser.parse_args(argv)
    from runner.cli import launcher_args

    split = launcher_args.split_mode(argv)
    if split is None:
        return parser.parse_args(launcher_args.default_launcher(argv))
    head, mode, rest = split
    args = parser.parse_args(head + [mode] + (["srun"] if mode == "slurm" else []))
    try:
        args.mode_args = launcher_args.parse(mode, rest)
    except Exception as exc:  # a usage error before the output is set up: argparse's way (exit 2, one line)
        from runner.errors import UsageError

        if not isinstance(exc, UsageError):
            raise
        parser.error(f"{exc.message}" + (f" (fix: {exc.hint})" if exc.hint else ""))
    for key, value in args.mode_args.globals.items():
        setattr(args, key, value)
    return args


def _dispatch(args, sources, out: Output, parser) -> int:
    """Each command's handler, imported on demand (a command loads only its own modules)."""
    return _HANDLERS[args.cmd](args, sources, out, parser)


def _check(args, sources, out, parser) -> int:
    from runner.commands.check import run_check
    from runner.options import CheckOptions

    from runner.engines import DEFAULT

    return run_check(CheckOptions(tuple(args.command), sources, _flags(args), args.engine or DEFAULT, args.online, args.timeout), out)


def _plan(args, sources, out, parser) -> int:
    from runner.options import RunOptions
    from runner.session import pipeline

    # `plan` is `up --dry-run`: the same plan, the same request, the same problems.
    return pipeline.run(RunOptions(command=tuple(args.command), sources=sources, flags=_flags(args), dry_run=True,
                                   debug=args.global_debug, engine_flags=_engine_flags(args, "plan")), _launch_engine(args), out)


def _launch(args, sources, out, parser) -> int:
    from runner.session import pipeline

    options = _run_options(args, sources)
    engine = _launch_engine(args, "slurm" if args.cmd == "submit" else None)  # submit is the Slurm engine's own command
    if options.interactive or options.tty:
        from runner.engines.docker.interactive import check_terminal_options

        check_terminal_options(options.interactive, options.tty, options.detach, options.dry_run)
    return pipeline.run(options, engine, out)


def _shell(args, sources, out, parser) -> int:
    from dataclasses import replace

    from runner.engines.docker.interactive import SHELL_COMMAND, check_terminal_options
    from runner.errors import UsageError
    from runner.session import pipeline

    if args.command:
        raise UsageError("shell takes no command (it runs the image's shell)", f"run a command with: primus-runner up -it -- {' '.join(args.command)}")
    options = replace(_run_options(args, sources), command=SHELL_COMMAND, interactive=True, tty=True)
    check_terminal_options(True, True, False, options.dry_run)
    return pipeline.run(options, _launch_engine(args), out)


def _verb(args, sources, out, parser) -> int:
    """``ps``, ``logs``, ``down``, ``exec``, ``status``, ``cancel``: a verb of the engine ``--engine``
    names, else of the first engine that declares it (or claims the name: a Slurm job id)."""
    from runner.engines import engine_for_verb, verb
    from runner.options import Selection

    if args.cmd == "logs":
        from runner.runs import commands as runs

        shown = runs.cmd_logs(args.name, out, sources, follow=args.follow, tail=args.tail, node=args.node)  # a recorded run
        if shown is not None:
            return shown
    names = tuple(filter(None, (getattr(args, key, None) for key in ("name", "job")))) or tuple(getattr(args, "names", ()))
    selection = Selection(sources, names, getattr(args, "all", False), getattr(args, "follow", False),
                          all_users=getattr(args, "all_users", False), tail=getattr(args, "tail", None),
                          dry_run=args.cmd in ("down", "cancel") and _dry_run(args, sources), node=getattr(args, "node", None),
                          command=tuple(getattr(args, "command", ())), engine=args.engine)
    engine = engine_for_verb(args.cmd, args.engine, names[0] if args.cmd == "logs" else None)
    if args.cmd == "down" and not selection.dry_run:
        from runner.runs import detached

        detached.before_down(names, selection.all, sources, out)  # a detached run's output outlives its container
    return verb(engine, args.cmd)(selection, out)


def _build(args, sources, out, parser) -> int:
    from runner import images
    from runner.options import BuildOptions

    return images.cmd_build(BuildOptions(
        sources=sources, flavor=args.flavor, base=args.base, tag=args.tag, build_args=tuple(args.build_arg),
        no_cache=args.no_cache, dry_run=_dry_run(args, sources), secrets=tuple(args.secret), file=args.file, context=args.context,
        pull=args.pull, push=args.push), out)


def _runs(args, sources, out, parser) -> int:
    from runner.runs import commands as runs

    if args.runs_cmd == "show":
        return runs.cmd_show(args.run, out)
    if args.runs_cmd == "gc":
        return runs.cmd_gc(args.older_than, out, dry_run=args.dry_run or args.global_dry_run)
    return runs.cmd_runs(out, all_users=args.all, limit=args.limit, state=args.state, engine=args.runs_engine, name=args.runs_name)


def _dry_run(args, sources) -> bool:
    """The global ``--dry-run``, the command's own, or ``dry_run: true`` in a launcher section."""
    if args.global_dry_run or getattr(args, "dry_run", False):
        return True
    from runner.config import load_config
    from runner.config.switches import launcher_switch

    return launcher_switch(load_config(sources.config_file), "dry_run")


def _node_agent(args, sources, out, parser) -> int:
    from runner.engines.slurm import agent

    return agent.cleanup(str(args.cleanup), out, args.plan_file) if args.cleanup else agent.run_node(args.plan_file, out)


def _audit(args, sources, out, parser) -> int:
    from runner.commands import audit

    return audit.cmd_audit(tuple(args.targets), sources, out)


def _completion(args, sources, out, parser) -> int:
    from runner.cli import completion

    sys.stdout.write(completion.script(args.shell, build_parser()))  # every command's arguments
    sys.stdout.flush()
    return 0


def _complete(args, sources, out, parser) -> int:
    from runner.cli.complete_names import candidates

    sys.stdout.write("".join(f"{name}\n" for name in candidates(args.kind)))
    return 0


def _mode(args, sources, out, parser) -> int:
    from runner.cli import launcher_modes

    from runner.cli.launcher_translate import mode_options

    return launcher_modes.run_mode(mode_options(args.mode_args, sources, args.global_dry_run, args.global_debug), out)


def _trust(args, sources, out, parser) -> int:
    from runner.commands import trust

    return trust.cmd_trust(sources, out, show=args.show, revoke=args.revoke)


def _demo(args, sources, out, parser) -> int:
    from runner.commands import demo

    return demo.cmd_demo(sources, out)


_HANDLERS = {
    "check": _check, "plan": _plan, "up": _launch, "submit": _launch, "shell": _shell,
    "ps": _verb, "logs": _verb, "down": _verb, "runs": _runs, "build": _build,
    "status": _verb, "cancel": _verb, "node-agent": _node_agent, "audit": _audit,
    "completion": _completion, "__complete": _complete, "exec": _verb, "container": _mode, "direct": _mode, "slurm": _mode, "demo": _demo,
    "trust": _trust,
}


def build_parser():
    """The whole command line (every command's arguments): completion and the tests walk it."""
    from runner.cli.parser import build_parser as whole

    return whole()


if __name__ == "__main__":
    raise SystemExit(main())
