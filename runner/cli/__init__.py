"""The command line: parse (``runner.cli.parser``), dispatch (``runner.cli.dispatch``), end with
the exit code ``runner.ui.exits`` gives what the command returned or raised.

Each command runs in its own module, imported only when it runs; exit codes are the contract's
(0 ok, 1 engine unavailable, 2 usage/config, 3 run-time failure, 4 leak found; a job's own code
once it ran; 130/143 interrupted).
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from runner import VERSION_TEXT


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # the fast path: no parser, no imports
        print(VERSION_TEXT)
        return 0
    from runner.options import Sources
    from runner.ui import Output
    from runner.ui.exits import run_guarded

    parsed: list = []  # Ctrl-C while still starting up (imports, parsing) is 130; a bug there shows its traceback
    code = run_guarded(lambda: parsed.extend(_parse(argv)), Output(color=False), bugs=False)
    if not parsed:
        return code
    parser, args = parsed
    sources = Sources(args.config, args.env_file, args.trust_project)
    out = Output(json_mode=args.json, color=not args.no_color, verbose=args.verbose, fallback=_early_masker(args.cmd, sources),
                 quiet=args.quiet)
    if not args.cmd:
        parser.print_help(sys.stderr)
        return 2

    def command() -> int:
        from runner.cli.dispatch import dispatch
        from runner.context import early_masks

        early_masks(args.cmd, sources, args.json, out)  # under CI: ::add-mask:: first, before anything can fail and print
        return dispatch(args, sources, out)
    return run_guarded(command, out, verbose=args.verbose)


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


_LAUNCHER_MODES = ("container", "direct", "slurm")  # launcher_args.MODES, known without importing it


def _parse(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """(the parser, the namespace): argparse for the runner's own commands, with the arguments of the
    command ``argv`` names; the launcher's modes as the launcher parses them (``runner.cli.launcher_args``:
    docker run options, Slurm flags, direct options as given)."""
    from runner.cli.parser import build_parser, scout

    scouted = scout(argv)
    parser = build_parser(scouted)
    if scouted.command not in _LAUNCHER_MODES:
        return parser, parser.parse_args(argv)
    from runner.cli import launcher_args

    split = launcher_args.split_mode(argv)
    if split is None:
        return parser, launcher_args.parse_mode_help(parser, launcher_args.default_launcher(argv))
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
    return parser, args


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (every command's arguments): completion and the tests walk it."""
    from runner.cli.parser import build_parser as whole

    return whole()


if __name__ == "__main__":
    raise SystemExit(main())
