"""The command line: every flag is parsed here, every error becomes its exit code here.

Commands do their work in their own modules; this file only parses, dispatches
and maps exceptions to the contract's exit codes (0 ok, 1 engine unavailable,
2 usage/config, 3 run-time failure, 4 leak found; a job's own code once it ran).
"""

from __future__ import annotations

import argparse
import gc
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
    """No abbreviations (``--imag`` is not ``--image``); usage errors exit 2 in one line, with a did-you-mean."""

    root: "_Parser | None" = None  # the top-level parser, and the argv it parses: to name the command in use
    argv: list[str] = []

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # argparse's own usage errors: exit 2, one line, no traceback
        if getattr(_Parser.root, "partial", False):
            raise _NeedsWholeTree  # say it as the whole tree would: parsed again with every command built
        from runner.cli import suggest
        from runner.context import early_scope
        from runner.options import Sources

        root = _Parser.root or self
        command = self if self is not root else suggest.subcommand(root, _command_in(_Parser.argv)[1])
        message, hint = suggest.explain(message, root, command)
        (command or self).print_usage(sys.stderr)  # the message may quote an argument: masked like everything else
        mask = early_scope(Sources(*_sources_in(_Parser.argv))).masker.mask
        print(f"error: {mask(message)}", file=sys.stderr)
        if hint:
            print(f"  fix: {mask(hint)}", file=sys.stderr)
        raise SystemExit(2)


class _NeedsWholeTree(Exception):
    """A parse with only one command's parser built failed: parse again with the whole tree."""


class _Unbuilt:
    """What a command's builder is handed for a command this run does not parse: it takes
    every call (arguments, groups, nested subcommands) and builds nothing."""

    def __getattr__(self, name):
        return self._nothing

    def _nothing(self, *args, **kwargs):
        return self


def _sources_in(argv: list[str]) -> tuple[str | None, str | None]:
    """``--config`` and ``--env-file`` wherever they stand (argparse has failed: no namespace)."""
    found: dict[str, str | None] = {"--config": None, "--env-file": None}
    for i, token in enumerate(argv):
        if token == "--":
            break
        name, eq, value = token.partition("=")
        if name in found:
            found[name] = value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return found["--config"], found["--env-file"]


def _launch_options(p: argparse.ArgumentParser, docker_short: bool = True) -> None:
    """The LAUNCH options; ``docker_short``: also ``-e``/``-w``/``-u`` as docker spells them
    (not on ``submit``, where sbatch's habits give ``-e`` and ``-w`` other meanings)."""
    short = (lambda flag: (flag,)) if docker_short else (lambda flag: ())
    g = p.add_argument_group("launch options (repeatable ones may be given many times)")
    g.add_argument("--image", metavar="IMG", help="container image")
    g.add_argument("--env", *short("-e"), action="append", default=[], metavar="KEY[=VALUE]", help="forward KEY from the host, or set a non-secret literal")
    g.add_argument("--volume", "-v", action="append", default=[], metavar="SRC[:DST[:OPTS]]", help="bind mount or named volume")
    g.add_argument("--device", action="append", default=[], metavar="PATH", help="extra device (host path[:container path])")
    g.add_argument("--gpu", choices=["rocm", "cuda", "none"], help="GPU flavor: ROCm devices, NVIDIA device request, or none")
    g.add_argument("--gpus", metavar="all|N|LIST", help="which GPUs: all (default), N free ones, or indices/ranges/UUIDs "
                   "such as 0-3,5 (numbered from 0 inside the job; under Slurm N per node)")
    g.add_argument("--name", help="container name (default: from config, else primus-<random>)")
    g.add_argument("--workdir", *short("-w"), metavar="DIR", help="working directory inside the container")
    g.add_argument("--shm-size", metavar="SIZE", help="size of /dev/shm, e.g. 64g")
    g.add_argument("--memory", metavar="SIZE", help="memory limit, e.g. 32g (default: none)")
    g.add_argument("--cpus", metavar="N", help="CPU limit, e.g. 8 or 1.5 (default: none)")
    g.add_argument("--network", metavar="NET", help="container network: host, bridge, none or a network name")
    g.add_argument("--ipc", metavar="MODE", help="IPC namespace: host, private or shareable")
    g.add_argument("--user", *short("-u"), metavar="UID[:GID]", help="user the job runs as inside the container")
    g.add_argument("--entrypoint", metavar="PROGRAM", help="run PROGRAM instead of the image's entrypoint, the command after -- "
                   "as its arguments (\"\" clears it), as docker run does")
    g.add_argument("--label", action="append", default=[], metavar="KEY=VALUE", help="a label on the container; repeatable "
                   "(io.primus-runner.* are the runner's own)")
    g.add_argument("--platform", metavar="OS/ARCH", help="the image's platform to run, e.g. linux/arm64 (pulled when the "
                   "local image is another one, as docker run does)")
    p.add_argument("command", nargs="*", metavar="-- CMD", help="the job's command, after --")


def _terminal_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--interactive", action="store_true", help="keep stdin open: what you type or pipe goes to the job")
    p.add_argument("-t", "--tty", action="store_true", help="give the job a terminal (yours, in raw mode; stdin must be "
                   "one); -it for a shell")


def _flags(args):
    from runner.options import LaunchFlags

    return LaunchFlags(
        image=args.image, env=tuple(args.env), volume=tuple(args.volume), device=tuple(args.device), gpu=args.gpu,
        gpus=args.gpus, name=args.name, workdir=args.workdir, shm_size=args.shm_size, memory=args.memory, cpus=args.cpus,
        network=args.network, ipc=args.ipc, user=args.user, pull=getattr(args, "pull", None),
        entrypoint=args.entrypoint, labels=tuple(args.label), platform=args.platform,
    )


def _global_options(p: argparse.ArgumentParser, default) -> None:
    """The global options. On a command's parser their default is SUPPRESS, so a value given
    after the command overrides the top level's and an absent one leaves it alone."""
    flag = {} if default is None else {"default": default}
    g = p.add_argument_group("global options (before or after the command)") if default is not None else p
    g.add_argument("--config", metavar="FILE", help="extra config layer above ./.primus.yaml", **flag)
    g.add_argument("--env-file", metavar="FILE", help="dotenv file with values, secrets allowed (default ./.env when it exists)", **flag)
    g.add_argument("--json", action="store_true", help="machine-readable JSON on stdout (check, plan, ps, submit, status, build)", **flag)
    g.add_argument("--no-color", action="store_true", help="plain output (NO_COLOR does the same)", **flag)
    g.add_argument("--verbose", action="store_true", help="more detail: files loaded, where each decision came from; tracebacks (masked) for internal errors", **flag)
    g.add_argument("-q", "--quiet", action="store_true", help="only errors and the job's own output", **flag)
    g.add_argument("--trust-project", action="store_true", help="trust this directory's .primus.yaml and .env as they are, "
                   "for a pipeline that checks out its own repository (PRIMUS_RUNNER_TRUST_PROJECT=1 does the same)", **flag)


def _pull_option(p: argparse.ArgumentParser, what: str = "when to pull the image") -> None:
    p.add_argument("--pull", choices=["missing", "always", "never"], help=f"{what} (default: container.pull, else missing)")


def _engine_options(p, command: str) -> None:
    """The options each engine declares as data (``options()``), as argparse: an engine's own flags
    need no edit here. ``up``/``plan``: only the engine that launches."""
    if isinstance(p, _Unbuilt):
        return  # a command this run does not parse: no engine module to load
    from runner.engines import engine_for

    for name in _option_engines(command):
        declared = engine_for(name).options()
        if declared:  # an engine with no options of its own loads nothing more
            from runner.cli.engine_options import declare

            declare(p, declared, command)


def _engine_flags(args, command: str) -> tuple:
    """(engine name, its typed flags) for each engine that read its own from the parsed values
    (``cli_flags``: a plain mapping, never the namespace)."""
    from runner.engines import engine_for

    found = []
    values = vars(args)
    for name in _option_engines(command):
        flags = engine_for(name).cli_flags(values, command)
        if flags is not None:
            found.append((name, flags))
    return tuple(found)


_ONE_ENGINE = ("up", "plan", "shell")  # they launch on the engine --engine names (else the default): only its flags


def _option_engines(command: str) -> tuple[str, ...]:
    from runner.engines import DEFAULT, ENGINES

    if command not in _ONE_ENGINE:
        return tuple(ENGINES)
    chosen = _engine_in(_Parser.argv) or DEFAULT
    return (chosen,) if chosen in ENGINES else ()  # an unknown one: the launch says so (exit 2)


def _engine_in(argv: list[str]) -> str | None:
    """``--engine NAME`` (or ``--engine=NAME``) before ``--``, before argparse has run."""
    for i, token in enumerate(argv):
        if token == "--":
            break
        if token == "--engine" and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith("--engine="):
            return token.partition("=")[2]
    return None


def _mode_switches(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="print what would run; run nothing")
    p.add_argument("--debug", action="store_true", help="PRIMUS_LOG_LEVEL=DEBUG for the job")


def _container_entry_options(p: argparse.ArgumentParser) -> None:
    _launch_options(p)  # its --gpus 0 runs without GPU devices, as primus-cli


def _direct_entry_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", action="append", default=[], metavar="KEY[=VALUE]", help="forward KEY from the host, or set a non-secret literal")
    g = p.add_argument_group("passed to the Primus direct launcher")
    g.add_argument("--single", action="store_true", help="python3 instead of torchrun")
    g.add_argument("--script", metavar="PATH", help="the training script the direct launcher runs")
    g.add_argument("--patch", action="append", default=[], metavar="PATH", help="a patch script run before training; repeatable")
    g.add_argument("--log_file", metavar="PATH", help="where the direct launcher writes its log")
    g.add_argument("--numa", action="store_true", help="bind each rank to its NUMA node")
    g.add_argument("--no-numa", action="store_true", help="no NUMA binding")
    p.add_argument("command", nargs="*", metavar="-- PRIMUS_ARGS", help="the Primus CLI's arguments, after --")


def _launcher_modes(cmd) -> None:
    """The Primus launcher's modes: ``primus-cli`` invocations work with ``primus-runner``."""
    p = cmd("container", "as primus-cli container: one container running the Primus direct launcher with the Primus args",
            "primus-runner container --volume /data:/data -- train pretrain --config /data/exp.yaml")
    _container_entry_options(p)
    _mode_switches(p)
    p.add_argument("--clean", action="store_true", help="first remove your own primus-runner containers (never other containers)")
    p.add_argument("--all-users", action="store_true", help="with --clean: every user's primus-runner containers")
    p.add_argument("--pull", choices=["missing", "always", "never"], help="when to pull the image (default: container.pull, else missing)")

    p = cmd("direct", "as primus-cli direct: the Primus direct launcher on this host, no container, env policy applied",
            "primus-runner direct -- train pretrain --config exp.yaml")
    _direct_entry_options(p)
    _mode_switches(p)

    p = cmd("slurm", "as primus-cli slurm: srun (default, waits, the job's code) or sbatch (submits, the job id)",
            "primus-runner slurm srun -N 2 -- train pretrain --config exp.yaml")
    # primus-cli slurm [--config F] [--debug] [--dry-run] [srun|sbatch] …: own dests, as srun's defaults would reset them
    p.add_argument("--dry-run", dest="slurm_dry_run", action="store_true", help="print the batch script; submit nothing")
    p.add_argument("--debug", dest="slurm_debug", action="store_true", help="PRIMUS_LOG_LEVEL=DEBUG for the job")
    launchers = p.add_subparsers(dest="launcher", metavar="srun|sbatch", parser_class=_Parser)
    for name, example in (("srun", "primus-runner slurm srun -N 4 -p P -- container -- train pretrain --config exp.yaml"),
                          ("sbatch", "primus-runner slurm sbatch -N 8 -t 8:00:00 -o train.log -- train pretrain --config exp.yaml")):
        q = launchers.add_parser(name, help=f"slurm {name}", description=f"primus-cli slurm {name}: -- [container|direct [entry options] --] <Primus args>",
                                 epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)
        _global_options(q, argparse.SUPPRESS)
        _engine_options(q, f"slurm {name}")
        q.add_argument("--export", help=argparse.SUPPRESS)  # hidden: the launcher refuses it (launcher_translate)
        _mode_switches(q)
        q.add_argument("command", nargs="*", metavar="-- [container|direct [options] --] PRIMUS_ARGS",
                       help="after --: the per-node entry (container or direct, with its options, then --) and the Primus args")


def _local_commands(cmd) -> None:
    """check, plan and up: one launch on this host."""
    p = cmd("check", "validate config, env policy, required secrets, devices and the engine", "primus-runner check --gpu none")
    p.add_argument("--online", action="store_true", help="also contact the trackers (MLflow, W&B) with the real credentials")
    p.add_argument("--engine", choices=_engine_names(), default=None, help="which engine must answer (default docker)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per online check (default 10)")
    _launch_options(p)

    p = cmd("plan", "print the fully resolved launch, secrets as ***, without side effects", "primus-runner plan --gpu none -- python train.py")
    _launch_options(p)
    _launch_engine_option(p)
    _engine_options(p, "plan")

    p = cmd("up", "run the job in a local Docker container and return its exit code", "primus-runner up --gpu none -- python train.py")
    _launch_options(p)
    p.add_argument("--detach", "-d", action="store_true", help="start and print the container name; do not wait")
    p.add_argument("--dry-run", action="store_true", help="print the plan instead (same as plan)")
    p.add_argument("--keep", action="store_true", help="keep the container after it ends or is interrupted")
    p.add_argument("--rm", action="store_true", help="remove the container when the job ends (the default; accepted as docker run takes it)")
    p.add_argument("--build", action="store_true", help="build the image from images/ first when it is missing")
    p.add_argument("--audit", action="store_true", help="audit the container for leaked secrets after launch (exit 4 on a leak)")
    p.add_argument("--report", metavar="FILE", help="write a JSON report of the run (no secret values)")
    _terminal_options(p)
    _pull_option(p)
    _launch_engine_option(p)
    _engine_options(p, "up")

    p = cmd("shell", "an interactive shell in the job's image, with the job's env, mounts, GPUs and secrets (up -it, the "
                     "image's bash, else sh)", "primus-runner shell --gpu none")
    _launch_options(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan and the docker run request instead")
    p.add_argument("--keep", action="store_true", help="keep the container after the shell exits")
    p.add_argument("--build", action="store_true", help="build the image from images/ first when it is missing")
    _pull_option(p)


def _container_commands(cmd) -> None:
    """ps, logs and down: the runner's own containers (and a Slurm job's logs)."""
    p = cmd("ps", "list the runner's own containers (running and leftovers); --engine slurm: its jobs in the queue", "primus-runner ps --json")
    p.add_argument("--all", "-a", action="store_true", help="accepted for familiarity: ps always lists running and stopped (leftover) runner containers")
    p.add_argument("--all-users", action="store_true", help="every user's runner containers (default: yours)")
    _engine_option(p)

    p = cmd("logs", "print a run's output (running or finished, from any directory), a runner container's, or a Slurm job's "
                    "from every node (rank by rank), masked",
            "primus-runner logs 20261201-103512-3fa9c1; primus-runner logs primus-1a2b3c4d -f; primus-runner logs 1234 -f --node 1")
    p.add_argument("name", help="a run id (from `runs`), a job or container name, or a Slurm job id")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new output until the job ends")
    p.add_argument("--node", metavar="N", help="Slurm job: only this rank (0, 1, …) or node name")
    p.add_argument("--tail", type=int, metavar="N", help="only the last N lines")
    p.add_argument("--all-users", action="store_true", help="another user's runner container (default: yours only)")
    _engine_option(p)

    p = cmd("exec", "run a command in one of your running runner containers (as docker exec), output masked",
            "primus-runner exec primus-1a2b3c4d -- nvidia-smi")
    p.add_argument("name", help="the container's name (primus-runner ps lists them)")
    p.add_argument("command", nargs="*", metavar="-- CMD", help="the command and its arguments, after --")
    p.add_argument("--all-users", action="store_true", help="another user's runner container (default: yours only)")
    _engine_option(p)

    p = cmd("down", "stop and remove the runner's containers (only the runner's own)", "primus-runner down --all")
    p.add_argument("names", nargs="*", metavar="NAME", help="container names (yours only)")
    p.add_argument("--all", action="store_true", help="every container the runner started on this host")
    p.add_argument("--all-users", action="store_true", help="every user's runner containers (default: yours)")
    p.add_argument("--dry-run", action="store_true", help="say which containers would be removed; remove nothing")
    _engine_option(p)


def _engine_names() -> list[str]:
    from runner.engines import ENGINES  # the registry alone: no engine module is imported

    return list(ENGINES)


def _engine_option(p: argparse.ArgumentParser) -> None:
    """``--engine NAME``: the engine a verb acts through (a name of ``runner.engines.ENGINES``)."""
    p.add_argument("--engine", metavar="ENGINE", help=f"the engine to ask: {', '.join(_engine_names())}; docker is Docker or Podman, "
                   "as container.engine says (default: the first engine that has this command)")


def _launch_engine_option(p: argparse.ArgumentParser) -> None:
    """``--engine NAME`` on ``up`` and ``plan``: the engine that runs the job (``runner.engines.ENGINES``)."""
    p.add_argument("--engine", metavar="ENGINE", help=f"the engine that runs the job: {', '.join(_engine_names())} (default docker: "
                   "Docker or Podman, as container.engine says; slurm: as submit --wait, with --detach as submit)")


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


def _runs_command(cmd) -> None:
    """runs: the record of every launch."""
    p = cmd("runs", "list past and running runs, newest first (their records: names only, no value)",
            "primus-runner runs -n 5; primus-runner runs show 20261201-103512-3fa9c1; primus-runner runs gc --older-than 30d")
    _runs_filters(p)
    sub = p.add_subparsers(dest="runs_cmd", metavar="list|show|gc", parser_class=_Parser)
    q = sub.add_parser("list", help="the runs (the default)")
    _global_options(q, argparse.SUPPRESS)
    _runs_filters(q, argparse.SUPPRESS)
    q = sub.add_parser("show", help="one run's record")
    _global_options(q, argparse.SUPPRESS)
    q.add_argument("run", help="a run id (or its start), a Slurm job id or a name")
    q = sub.add_parser("gc", help="remove finished runs older than a duration, with their directories")
    _global_options(q, argparse.SUPPRESS)
    q.add_argument("--older-than", required=True, metavar="DURATION", help="e.g. 30d, 12h, 90m, 2w")
    q.add_argument("--dry-run", action="store_true", help="list what would be removed")


def _runs_filters(p: argparse.ArgumentParser, default=None) -> None:
    flag = {} if default is None else {"default": default}
    p.add_argument("--all", action="store_true", help="every user's runs (a shared state directory)", **({"default": default} if default else {}))
    p.add_argument("-n", type=int, metavar="N", dest="limit", help="only the newest N (default: 20 in the table, all with --json)", **flag)
    p.add_argument("--state", choices=["running", "succeeded", "failed", "interrupted", "lost", "unknown", "error"],
                   help="only runs in this state", **flag)
    p.add_argument("--engine", dest="runs_engine", metavar="ENGINE", help="docker, podman, slurm or process", **flag)
    p.add_argument("--name", dest="runs_name", metavar="NAME", help="only runs of this job or container name", **flag)


def _build_command(cmd) -> None:
    """build: the ROCm/CUDA recipes or your own Dockerfile."""
    p = cmd("build", "build a training image from images/<flavor>/", "primus-runner build --flavor rocm --tag my/primus:dev")
    p.add_argument("--flavor", choices=["rocm", "cuda"], default=None, help="which recipe under images/ (default rocm)")
    p.add_argument("--base", metavar="IMAGE", help="base image (build argument BASE_IMAGE)")
    p.add_argument("--tag", "-t", metavar="TAG", help="the image's name:tag (default: images.<flavor>.tag)")
    p.add_argument("--build-arg", action="append", default=[], metavar="K=V", help="a build argument; repeatable")
    p.add_argument("--no-cache", action="store_true", help="rebuild every step")
    p.add_argument("--push", action="store_true", help="push the tag to its registry afterwards, with the credentials a pull uses "
                   "(Docker config, credential helpers, DOCKER_LOGIN_*)")
    p.add_argument("--dry-run", action="store_true", help="print the resolved build without building")
    p.add_argument("--secret", action="append", default=[], metavar="NAME",
                   help="expose NAME (from the environment or env file) to RUN --mount=type=secret,id=NAME steps; repeatable")
    p.add_argument("--file", "-f", metavar="PATH", help="build your own Dockerfile instead of images/<flavor>/")
    p.add_argument("--context", metavar="DIR", help="the build context of --file (default .)")
    _pull_option(p, "when to pull the base image")


def _slurm_commands(cmd) -> None:
    """submit, status and cancel: Slurm."""
    p = cmd("submit", "submit the job to Slurm, one container per node", "primus-runner submit -N 2 -t 4:00:00 --wait -- python train.py")
    _launch_options(p, docker_short=False)
    _engine_options(p, "submit")  # the Slurm engine's job and cluster options
    p.add_argument("--dry-run", action="store_true", help="print the batch script")
    p.add_argument("--wait", action="store_true", help="wait for the job, stream its output, return its exit code")
    p.add_argument("--audit", action="store_true", help="audit the job's output files after it ends (with --wait)")
    p.add_argument("--report", metavar="FILE", help="write a JSON report of the run (no secret values)")
    _pull_option(p)

    p = cmd("status", "a Slurm job's state and exit code", "primus-runner status 1234 --json")
    p.add_argument("job", help="the Slurm job id")
    _engine_option(p)
    p = cmd("cancel", "cancel a Slurm job and remove its containers on every node", "primus-runner cancel 1234")
    p.add_argument("job", help="the Slurm job id")
    p.add_argument("--dry-run", action="store_true", help="say what would be cancelled and removed; do nothing")
    _engine_option(p)


def _tool_commands(cmd) -> None:
    """audit, completion and demo."""
    p = cmd("audit", "scan containers, images, files or directories for secret values in scope", "primus-runner audit primus-1a2b3c4d ./slurm-logs")
    p.add_argument("targets", nargs="*", metavar="TARGET", help="container, image, file or directory (default: the runner's containers and state)")

    p = cmd("completion", "print a shell completion script", "source <(primus-runner completion bash)")
    p.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell to complete in")

    cmd("demo", "run the built-in demo job locally (no registry, no GPU needed)", "primus-runner demo")

    p = cmd("trust", "trust this directory's project files (.primus.yaml, .env, a Primus checkout's runner/.primus.yaml) "
            "as they are now: their secret references, endpoints and build paths then apply", "primus-runner trust --show")
    p.add_argument("--show", action="store_true", help="list the project files, whether each is trusted, and what trust would allow; record nothing")
    p.add_argument("--revoke", action="store_true", help="forget the trust of this directory's project files")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only``, that command's parser alone beside the global options
    (a run parses one command: building the other 25 took longer than anything ``plan`` does)."""
    parser = _Parser(
        prog="primus-runner",
        description="Launch ML training jobs in containers (local Docker, CI, Slurm) without leaking a secret.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _global_options(parser, None)
    parser.add_argument("--dry-run", dest="global_dry_run", action="store_true", help="print what would run; launch, submit and remove nothing (as primus-cli --dry-run)")
    parser.add_argument("--debug", dest="global_debug", action="store_true", help="launcher modes: PRIMUS_LOG_LEVEL=DEBUG for the job (as primus-cli --debug)")
    parser.add_argument("--version", action="version", version=f"primus-runner {__version__}")
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    _Parser.root = parser

    parser.partial = only is not None

    def cmd(name: str, help: str, example: str) -> argparse.ArgumentParser:
        if only is not None and name != only:
            return _Unbuilt()
        p = sub.add_parser(name, help=help, description=help, epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)
        _global_options(p, argparse.SUPPRESS)  # also after the command, as docker/kubectl/gh accept them
        return p

    for add in (_local_commands, _container_commands, _runs_command, _build_command, _slurm_commands, _tool_commands, _launcher_modes):
        add(cmd)

    if only in (None, "node-agent"):
        p = sub.add_parser("node-agent")  # no help=: hidden from --help, completion and errors; started by srun on each Slurm node
        p.add_argument("plan_file", nargs="?", help="the job's plan file (names only)")
        p.add_argument("--cleanup", metavar="JOB", help="remove this Slurm job's containers on this node, then exit")
    if only in (None, "__complete"):
        p = sub.add_parser("__complete")  # hidden: the completion scripts ask it for container names and job ids on TAB
        p.add_argument("kind", choices=["containers", "jobs", "names"], help="what to list, one per line")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    entry = argv is None  # the process's own command line: it exits when this returns
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # the fast path: no parser, no imports
        print(f"primus-runner {__version__}")
        return 0
    collecting = gc.isenabled()
    gc.disable()  # start-up makes objects, not garbage: the collector's passes over them are wasted (on in _dispatch)
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C while still starting up (imports, parsing): 130, no traceback
        print("error: interrupted", file=sys.stderr)
        return 130
    finally:
        if entry and not gc.isenabled():  # a plan, ending with its process: its objects live to the exit, and
            gc.freeze()  # the exit's collection need not walk them (a launch ends with the collector on: its files close)
        if collecting:  # as the caller had it (tests call main in their own process)
            gc.enable()


def _main(argv: list[str]) -> int:
    from runner.errors import RunnerError
    from runner.options import Sources
    from runner.ui import Output

    _Parser.argv = argv
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
_WHOLE_TREE = ("completion",)  # walks every command's parser


def _parse(argv: list[str]):
    """(the parser, the namespace): only the command's own parser is built; any usage error
    is reported from the whole tree, as if it had been built (the messages name other commands)."""
    command = _command_in(argv)[1]
    if command is not None and not command.startswith("-") and command not in _WHOLE_TREE:
        parser = build_parser(only=command)
        try:
            return parser, _parse_with(parser, argv, command)
        except _NeedsWholeTree:
            pass
        finally:
            parser.partial = False  # a later error (a handler's) is reported, not retried
    parser = build_parser()
    return parser, _parse_with(parser, argv, command)


def _parse_with(parser: argparse.ArgumentParser, argv: list[str], command: str | None):
    """argparse for the runner's own commands; the launcher's modes as the launcher parses them
    (``runner.cli.launcher_args``: docker run options, Slurm flags, direct options as given)."""
    if command not in _LAUNCHER_MODES:
        return parser.parse_args(argv)
    from runner.cli import launcher_args

    split = launcher_args.split_mode(argv)
    if split is None:
        return parser.parse_args(_default_launcher(argv))
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


_GLOBAL_FLAGS = {"--json", "--no-color", "--verbose", "-q", "--quiet", "--dry-run", "--debug", "--trust-project"}


def _command_in(argv: list[str]) -> tuple[int, str | None]:
    """Where the command stands in ``argv`` (after the global options), and its name."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in ("--config", "--env-file"):
            i += 2
            continue
        if token in _GLOBAL_FLAGS or token.startswith(("--config=", "--env-file=")):
            i += 1
            continue
        return i, token
    return i, None


def _default_launcher(argv: list[str]) -> list[str]:
    """``slurm`` without ``srun``/``sbatch`` means ``srun``, as in primus-cli."""
    i, command = _command_in(argv)
    if command != "slurm":
        return argv
    j = i + 1
    while j < len(argv) and (argv[j] in _GLOBAL_FLAGS or argv[j] in ("--config", "--env-file")
                             or argv[j].startswith(("--config=", "--env-file="))):
        j += 2 if argv[j] in ("--config", "--env-file") else 1
    if j < len(argv) and argv[j] in ("srun", "sbatch", "-h", "--help"):
        return argv
    return argv[:i + 1] + ["srun"] + argv[i + 1:]


def _dispatch(args, sources, out: Output, parser) -> int:
    """Each command's handler, imported on demand (a command loads only its own modules)."""
    if args.cmd not in _BOUNDED:
        gc.enable()  # a launch, a follower, a build: runs as long as its job
    return _HANDLERS[args.cmd](args, sources, out, parser)


_BOUNDED = ("plan",)  # a plan's work is as small as its config: it runs to its end without the cyclic collector


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

    sys.stdout.write(completion.script(args.shell, parser))
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


if __name__ == "__main__":
    raise SystemExit(main())
