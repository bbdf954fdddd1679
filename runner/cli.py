"""The command line: every flag is parsed here, every error becomes its exit code here.

Commands do their work in their own modules; this file only parses, dispatches
and maps exceptions to the contract's exit codes (0 ok, 1 engine unavailable,
2 usage/config, 3 run-time failure, 4 leak found; a job's own code once it ran).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Sequence

from runner import __version__

if TYPE_CHECKING:  # the CLI imports its modules inside main(), so `--version` starts fast
    from runner.ui import Output

EPILOG = """exit codes: 0 ok; 1 engine unavailable; 2 invalid usage/config/missing secret (nothing launched);
3 run-time failure; 4 leak found (audit); a job's own code once it has started; 130/143 interrupted.
docs: README.md and docs/ in the primus-runner repository."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own usage errors: exit 2, one line, no traceback
        from runner import ci
        from runner.secrets import Masker

        self.print_usage(sys.stderr)  # the message may quote an argument: masked like everything else
        print(f"error: {Masker(ci.early_secrets(None, None)).mask(message)}", file=sys.stderr)
        raise SystemExit(2)


def _launch_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("launch options (repeatable ones may be given many times)")
    g.add_argument("--image", metavar="IMG", help="container image")
    g.add_argument("--env", action="append", default=[], metavar="KEY[=VALUE]", help="forward KEY from the host, or set a non-secret literal")
    g.add_argument("--volume", "-v", action="append", default=[], metavar="SRC[:DST[:OPTS]]", help="bind mount or named volume")
    g.add_argument("--device", action="append", default=[], metavar="PATH", help="extra device")
    g.add_argument("--gpu", choices=["rocm", "cuda", "none"], help="GPU flavor: ROCm devices, NVIDIA device request, or none")
    g.add_argument("--name", help="container name (default: from config, else primus-<random>)")
    g.add_argument("--workdir", metavar="DIR")
    g.add_argument("--shm-size", metavar="SIZE")
    g.add_argument("--memory", metavar="SIZE")
    g.add_argument("--cpus", metavar="N")
    g.add_argument("--network")
    g.add_argument("--ipc")
    g.add_argument("--user")
    p.add_argument("command", nargs="*", metavar="-- CMD", help="the job's command, after --")


def _flags(args):
    from runner.plan import LaunchFlags

    return LaunchFlags(
        image=args.image, env=tuple(args.env), volume=tuple(args.volume), device=tuple(args.device), gpu=args.gpu,
        name=args.name, workdir=args.workdir, shm_size=args.shm_size, memory=args.memory, cpus=args.cpus,
        network=args.network, ipc=args.ipc, user=args.user,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="primus-runner",
        description="Launch ML training jobs in containers (local Docker, CI, Slurm) without leaking a secret.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", metavar="FILE", help="extra config layer above ./.primus.yaml")
    parser.add_argument("--env-file", metavar="FILE", help="dotenv file with values, secrets allowed (default ./.env when it exists)")
    parser.add_argument("--json", action="store_true", help="machine-readable JSON on stdout (check, plan, ps, submit, status, build)")
    parser.add_argument("--no-color", action="store_true", help="plain output (NO_COLOR does the same)")
    parser.add_argument("--verbose", action="store_true", help="more detail; tracebacks (masked) for internal errors")
    parser.add_argument("--version", action="version", version=f"primus-runner {__version__}")
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)

    def cmd(name: str, help: str, example: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)

    p = cmd("check", "validate config, env policy, required secrets, devices and the engine", "primus-runner check --gpu none")
    p.add_argument("--online", action="store_true", help="also contact the trackers (MLflow, W&B) with the real credentials")
    p.add_argument("--engine", choices=["docker", "slurm"], default="docker", help="which engine must answer (default docker)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per online check (default 10)")
    _launch_options(p)

    p = cmd("plan", "print the fully resolved launch, secrets as ***, without side effects", "primus-runner plan --gpu none -- python train.py")
    _launch_options(p)

    p = cmd("up", "run the job in a local Docker container and return its exit code", "primus-runner up --gpu none -- python train.py")
    _launch_options(p)
    p.add_argument("--detach", "-d", action="store_true", help="start and print the container name; do not wait")
    p.add_argument("--dry-run", action="store_true", help="print the plan instead (same as plan)")
    p.add_argument("--keep", action="store_true", help="keep the container after it ends or is interrupted")
    p.add_argument("--build", action="store_true", help="build the image from images/ first when it is missing")
    p.add_argument("--audit", action="store_true", help="audit the container for leaked secrets after launch (exit 4 on a leak)")
    p.add_argument("--report", metavar="FILE", help="write a JSON report of the run (no secret values)")

    p = cmd("ps", "list the runner's own containers (running and leftovers)", "primus-runner ps --json")
    p.add_argument("--all", "-a", action="store_true", help="accepted for familiarity: ps always lists running and stopped (leftover) runner containers")

    p = cmd("logs", "print a runner container's output, masked", "primus-runner logs primus-1a2b3c4d -f")
    p.add_argument("name")
    p.add_argument("--follow", "-f", action="store_true")

    p = cmd("down", "stop and remove the runner's containers (only the runner's own)", "primus-runner down --all")
    p.add_argument("names", nargs="*", metavar="NAME")
    p.add_argument("--all", action="store_true", help="every container the runner started on this host")

    p = cmd("build", "build a training image from images/<flavor>/", "primus-runner build --flavor rocm --tag my/primus:dev")
    p.add_argument("--flavor", choices=["rocm", "cuda"], default=None, help="default rocm")
    p.add_argument("--base", metavar="IMAGE", help="base image (build argument BASE_IMAGE)")
    p.add_argument("--tag", metavar="TAG")
    p.add_argument("--build-arg", action="append", default=[], metavar="K=V")
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--dry-run", action="store_true", help="print the resolved build without building")

    p = cmd("submit", "submit the job to Slurm, one container per node", "primus-runner submit --nodes 2 --wait -- python train.py")
    _launch_options(p)
    p.add_argument("--nodes", type=int, metavar="N")
    p.add_argument("--partition", metavar="P")
    p.add_argument("--time", metavar="T")
    p.add_argument("--account", metavar="A")
    p.add_argument("--gpus-per-node", type=int, metavar="G")
    p.add_argument("--dry-run", action="store_true", help="print the batch script")
    p.add_argument("--wait", action="store_true", help="wait for the job, stream its output, return its exit code")
    p.add_argument("--audit", action="store_true", help="audit the job's output files after it ends (with --wait)")
    p.add_argument("--report", metavar="FILE", help="write a JSON report of the run (no secret values)")

    p = cmd("status", "a Slurm job's state and exit code", "primus-runner status 1234 --json")
    p.add_argument("job")
    p = cmd("cancel", "cancel a Slurm job and remove its containers on every node", "primus-runner cancel 1234")
    p.add_argument("job")

    p = cmd("audit", "scan containers, images, files or directories for secret values in scope", "primus-runner audit primus-1a2b3c4d ./slurm-logs")
    p.add_argument("targets", nargs="*", metavar="TARGET", help="container, image, file or directory (default: the runner's containers and state)")

    p = cmd("completion", "print a shell completion script", "source <(primus-runner completion bash)")
    p.add_argument("shell", choices=["bash", "zsh", "fish"])

    cmd("demo", "run the built-in demo job locally (no registry, no GPU needed)", "primus-runner demo")

    p = sub.add_parser("node-agent")  # no help=: hidden from --help; started by srun on each Slurm node
    p.add_argument("plan_file", nargs="?")
    p.add_argument("--cleanup", metavar="JOB", help="remove this Slurm job's containers on this node, then exit")
    return parser


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
    from runner.errors import JobExit, RunnerError
    from runner.ui import Output

    misplaced = _misplaced_global(argv)
    if misplaced:  # argparse would only say "unrecognized arguments"; say where it belongs
        print(f"error: {misplaced}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Output(json_mode=args.json, color=not args.no_color, verbose=args.verbose, fallback=_early_masker(args))
    if not args.cmd:
        parser.print_help(sys.stderr)
        return 2
    try:
        from runner import ci

        ci.early_masks(args, out)  # under CI: ::add-mask:: first, before anything can fail and print
        return _dispatch(args, out) or 0
    except JobExit as exc:
        if exc.message:
            out.error(exc.message)
        return exc.code
    except RunnerError as exc:
        from runner import ci
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


def _early_masker(args):
    """The masker for messages printed before a command installs its own (``down NAME``,
    ``status``, a schema error quoting a flag's value): every secret-named value in the
    environment and the env file. Built lazily, on the first message only. Not for
    ``completion`` (a script, no secrets in it) nor the node agent (its plan's masker)."""
    if args.cmd in ("completion", "node-agent"):
        return None

    def build():
        from runner import ci
        from runner.secrets import Masker

        return Masker(ci.early_secrets(getattr(args, "config", None), getattr(args, "env_file", None)))

    return build


GLOBAL_OPTIONS = ("--config", "--env-file", "--json", "--no-color", "--verbose")


def _misplaced_global(argv: list[str]) -> str | None:
    """A global option given after the command (before any ``--``): the one-line fix, else None."""
    command_at = None
    for i, token in enumerate(argv):
        if token == "--":
            return None
        if command_at is None:
            if not token.startswith("-") and (i == 0 or argv[i - 1] not in ("--config", "--env-file")):
                command_at = i
            continue
        option = token.split("=", 1)[0]
        if option in GLOBAL_OPTIONS:
            takes_value = option in ("--config", "--env-file") and "=" not in token
            moved = " ".join([*argv[:command_at], *argv[i:i + 1 + takes_value]])
            return f"{option} is a global option and goes before the command: primus-runner {moved} {argv[command_at]} ..."
    return None


def _dispatch(args, out: Output) -> int:
    name = args.cmd
    if name == "check":
        from runner.check import run_check

        return run_check(args, out, _flags(args))
    if name == "plan" or (name == "up" and args.dry_run):
        from runner.render import show_plan
        from runner.launch import prepare

        prepared = prepare(out, args.config, args.env_file, args.command, _flags(args))
        show_plan(prepared.planned.require(), out)
        return 0
    if name == "up":
        from runner.engines import docker

        return docker.up(args, out, _flags(args))
    if name in ("ps", "logs", "down"):
        from runner.engines import docker

        return getattr(docker, f"cmd_{name}")(args, out)
    if name == "build":
        from runner import images

        return images.cmd_build(args, out)
    if name in ("submit", "status", "cancel", "node-agent"):
        from runner.engines import slurm

        return getattr(slurm, "cmd_" + name.replace("-", "_"))(args, out, _flags(args) if name == "submit" else None)
    if name == "audit":
        from runner import audit

        return audit.cmd_audit(args, out)
    if name == "completion":
        from runner import completion

        return completion.cmd_completion(args, out)
    if name == "demo":
        from runner import demo

        return demo.cmd_demo(args, out)
    raise AssertionError(name)


if __name__ == "__main__":
    raise SystemExit(main())
