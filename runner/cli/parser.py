"""The command line's grammar: every command's arguments, declared with argparse.

``COMMANDS`` lists each command with its one-line help and example; ``ARGUMENTS`` holds the
function that declares its arguments. A run configures the arguments of the command it runs
(``build_parser(command)``) and lists the others by name; ``build_parser()`` configures every
one (completion, the tests). What the parser must know before it is built (the command's name,
the engine whose flags ``up``/``plan`` take, the files a usage error's masker reads) is found by
argparse itself, with ``parse_known_args`` (``scout``).
"""

from __future__ import annotations

import argparse
import sys
from typing import NamedTuple

from runner import VERSION_TEXT

EPILOG = """exit codes: 0 ok; 1 engine unavailable; 2 invalid usage/config/missing secret (nothing launched);
3 run-time failure; 4 leak found (audit); a job's own code once it has started; 130/143 interrupted.
docs: README.md and docs/ in the primus-runner repository."""


class _Parser(argparse.ArgumentParser):
    """No abbreviations (``--imag`` is not ``--image``); usage errors exit 2 in one line, with a did-you-mean."""

    root: "_Parser | None" = None  # the top-level parser, and what was scouted of the argv it parses
    scouted: "Scouted | None" = None

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # argparse's own usage errors: exit 2, one line, no traceback
        from runner.cli import suggest
        from runner.context import early_scope
        from runner.options import Sources

        root = _Parser.root or self
        seen = _Parser.scouted or Scouted()
        command = self if self is not root else suggest.subcommand(root, seen.command)
        message, hint = suggest.explain(message, root, command)
        hint = suggest.with_help(hint, (command or self).prog)  # one line and the fix, not the usage block
        mask = early_scope(Sources(seen.config, seen.env_file)).masker.mask  # the message may quote an argument
        print(f"error: {mask(message)}", file=sys.stderr)
        print(f"  fix: {mask(hint)}", file=sys.stderr)
        raise SystemExit(2)

    def format_help(self) -> str:
        from runner.ui import launcher_text  # the launcher's own help words, loaded only when a help is shown

        plain, self.description = self.description, launcher_text.help_description(self.prog, self.description)
        try:
            return super().format_help()
        finally:
            self.description = plain


class Scouted(NamedTuple):
    """What a command line says before its parser is built."""

    command: str | None = None  # the first word after the global options
    engine: str | None = None  # --engine, before --
    config: str | None = None  # --config, --env-file, before or after the command (a usage error's masker reads them)
    env_file: str | None = None
    help: bool = False  # -h/--help before the command: the top level's help, which lists every command


class _Unparsable(Exception):
    pass


class _Scout(argparse.ArgumentParser):
    """A parser that reads only some options and never exits: what it cannot read stays unknown."""

    def __init__(self):
        super().__init__(add_help=False, allow_abbrev=False)

    def error(self, message: str):
        raise _Unparsable(message)


def scout(argv: list[str]) -> Scouted:
    """The command's name (after the global options) and the options the parser depends on, read
    by argparse (``parse_known_args``: the rest is left to the full parser, which reports it)."""
    top = _Scout()
    _global_options(top, None)
    _top_switches(top)
    top.add_argument("-h", "--help", action="store_true")
    top.add_argument("command", nargs="?")
    top.add_argument("rest", nargs=argparse.REMAINDER)
    anywhere = _Scout()
    for flag in ("--config", "--env-file", "--engine"):
        anywhere.add_argument(flag)
    try:
        seen = top.parse_known_args(argv)[0]
        command, wants_help = seen.command, seen.help
    except _Unparsable:
        command, wants_help = None, False
    try:
        found = anywhere.parse_known_args(argv)[0]
    except _Unparsable:
        found = argparse.Namespace(config=None, env_file=None, engine=None)
    return Scouted(command, found.engine, found.config, found.env_file, wants_help)


def _top_switches(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", dest="global_dry_run", action="store_true", help="print what would run; launch, submit and remove nothing (as primus-cli --dry-run)")
    p.add_argument("--debug", dest="global_debug", action="store_true", help="launcher modes: PRIMUS_LOG_LEVEL=DEBUG for the job (as primus-cli --debug)")


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


def _engine_options(p, command: str, engine: str | None) -> None:
    """The options each engine declares as data (``options()``), as argparse: an engine's own flags
    need no edit here. ``up``/``plan``: only ``engine``, the one that launches."""
    from runner.engines import engine_for

    for name in option_engines(command, engine):
        declared = engine_for(name).options()
        if declared:  # an engine with no options of its own loads nothing more
            from runner.cli.engine_options import declare

            declare(p, declared, command)


ONE_ENGINE = ("up", "plan", "shell")  # they launch on the engine --engine names (else the default): only its flags


def option_engines(command: str, engine: str | None) -> tuple[str, ...]:
    """The engines whose own flags ``command`` takes (``engine``: what ``--engine`` named)."""
    from runner.engines import ALIASES, DEFAULT, ENGINES

    if command not in ONE_ENGINE:
        return tuple(ENGINES)
    chosen = engine or DEFAULT
    chosen = ALIASES[chosen][0] if chosen in ALIASES else chosen
    return (chosen,) if chosen in ENGINES else ()  # an unknown one: the launch says so (exit 2)


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


def _engine_names() -> list[str]:
    from runner.engines import names  # the registry alone: no engine module is imported

    return names()


def _engine_option(p: argparse.ArgumentParser) -> None:
    """``--engine NAME``: the engine a verb acts through (a name of ``runner.engines.ENGINES``)."""
    p.add_argument("--engine", metavar="ENGINE", help=f"the engine to ask: {', '.join(_engine_names())}; docker is Docker or Podman, "
                   "as container.engine says (default: the first engine that has this command)")


def _launch_engine_option(p: argparse.ArgumentParser) -> None:
    """``--engine NAME`` on ``up`` and ``plan``: the engine that runs the job (``runner.engines.ENGINES``)."""
    p.add_argument("--engine", metavar="ENGINE", help=f"the engine that runs the job: {', '.join(_engine_names())} (default docker: "
                   "Docker or Podman, as container.engine says; slurm: as submit --wait, with --detach as submit)")


def _runs_filters(p: argparse.ArgumentParser, default=None) -> None:
    flag = {} if default is None else {"default": default}
    p.add_argument("--all", action="store_true", help="every user's runs (a shared state directory)", **({"default": default} if default else {}))
    p.add_argument("-n", type=int, metavar="N", dest="limit", help="only the newest N (default: 20 in the table, all with --json)", **flag)
    p.add_argument("--state", choices=["running", "succeeded", "failed", "interrupted", "lost", "unknown", "error"],
                   help="only runs in this state", **flag)
    p.add_argument("--engine", dest="runs_engine", metavar="ENGINE", help="docker, podman, slurm or process", **flag)
    p.add_argument("--name", dest="runs_name", metavar="NAME", help="only runs of this job or container name", **flag)




# ---------------------------------------------------------------- each command's arguments

def _check(p, engine):
    p.add_argument("--online", action="store_true", help="also contact the trackers (MLflow, W&B) with the real credentials")
    p.add_argument("--engine", choices=_engine_names(), default=None, help="which engine must answer (default docker)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per online check (default 10)")
    _launch_options(p)


def _plan(p, engine):
    _launch_options(p)
    _launch_engine_option(p)
    _engine_options(p, "plan", engine)


def _up(p, engine):
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
    _engine_options(p, "up", engine)


def _shell(p, engine):
    _launch_options(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan and the docker run request instead")
    p.add_argument("--keep", action="store_true", help="keep the container after the shell exits")
    p.add_argument("--build", action="store_true", help="build the image from images/ first when it is missing")
    _pull_option(p)


def _ps(p, engine):
    p.add_argument("--all", "-a", action="store_true", help="accepted for familiarity: ps always lists running and stopped (leftover) runner containers")
    p.add_argument("--all-users", action="store_true", help="every user's runner containers (default: yours)")
    _engine_option(p)


def _logs(p, engine):
    p.add_argument("name", help="a run id (from `runs`), a job or container name, or a Slurm job id")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new output until the job ends")
    p.add_argument("--node", metavar="N", help="Slurm job: only this rank (0, 1, …) or node name")
    p.add_argument("--tail", type=int, metavar="N", help="only the last N lines")
    p.add_argument("--all-users", action="store_true", help="another user's runner container (default: yours only)")
    _engine_option(p)


def _exec(p, engine):
    p.add_argument("-i", "--interactive", action="store_true", help="keep stdin open: what you type or pipe goes to the command")
    p.add_argument("-t", "--tty", action="store_true", help="give the command a terminal (stdin must be one); -it for a shell")
    p.add_argument("--all-users", action="store_true", help="another user's runner container (default: yours only)")
    _engine_option(p)
    p.add_argument("name", help="the container's name (primus-runner ps lists them)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="[--] CMD", help="the command and its arguments (-i/-t may come first)")


def _down(p, engine):
    p.add_argument("names", nargs="*", metavar="NAME", help="container names (yours only)")
    p.add_argument("--all", action="store_true", help="every container the runner started on this host")
    p.add_argument("--all-users", action="store_true", help="every user's runner containers (default: yours)")
    p.add_argument("--dry-run", action="store_true", help="say which containers would be removed; remove nothing")
    _engine_option(p)


def _runs(p, engine):
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


def _build(p, engine):
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


def _submit(p, engine):
    _launch_options(p, docker_short=False)
    _engine_options(p, "submit", engine)  # the Slurm engine's job and cluster options
    p.add_argument("--dry-run", action="store_true", help="print the batch script")
    p.add_argument("--wait", action="store_true", help="wait for the job, stream its output, return its exit code")
    p.add_argument("--audit", action="store_true", help="audit the job's output files after it ends (with --wait)")
    p.add_argument("--report", metavar="FILE", help="write a JSON report of the run (no secret values)")
    _pull_option(p)


def _status(p, engine):
    p.add_argument("job", help="the Slurm job id")
    _engine_option(p)


def _cancel(p, engine):
    p.add_argument("job", help="the Slurm job id")
    p.add_argument("--dry-run", action="store_true", help="say what would be cancelled and removed; do nothing")
    _engine_option(p)


def _audit(p, engine):
    p.add_argument("targets", nargs="*", metavar="TARGET", help="container, image, file or directory (default: the runner's containers and state)")


def _completion(p, engine):
    p.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell to complete in")


def _demo(p, engine):
    pass


def _trust(p, engine):
    p.add_argument("--show", action="store_true", help="list the project files, whether each is trusted, and what trust would allow; record nothing")
    p.add_argument("--revoke", action="store_true", help="forget the trust of this directory's project files")


def _container(p, engine):
    _container_entry_options(p)
    _mode_switches(p)
    p.add_argument("--clean", action="store_true", help="first remove your own primus-runner containers (never other containers)")
    p.add_argument("--all-users", action="store_true", help="with --clean: every user's primus-runner containers")
    p.add_argument("--pull", choices=["missing", "always", "never"], help="when to pull the image (default: container.pull, else missing)")


def _direct(p, engine):
    _direct_entry_options(p)
    _mode_switches(p)


def _slurm(p, engine):
    # primus-cli slurm [--config F] [--debug] [--dry-run] [srun|sbatch] …: own dests, as srun's defaults would reset them
    p.add_argument("--dry-run", dest="slurm_dry_run", action="store_true", help="print the batch script; submit nothing")
    p.add_argument("--debug", dest="slurm_debug", action="store_true", help="PRIMUS_LOG_LEVEL=DEBUG for the job")
    launchers = p.add_subparsers(dest="launcher", metavar="srun|sbatch", parser_class=_Parser)
    for name, example in (("srun", "primus-runner slurm srun -N 4 -p P -- container -- train pretrain --config exp.yaml"),
                          ("sbatch", "primus-runner slurm sbatch -N 8 -t 8:00:00 -o train.log -- train pretrain --config exp.yaml")):
        q = launchers.add_parser(name, help=f"slurm {name}", description=f"primus-cli slurm {name}: -- [container|direct [entry options] --] <Primus args>",
                                 epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)
        _global_options(q, argparse.SUPPRESS)
        _engine_options(q, f"slurm {name}", engine)
        q.add_argument("--export", help=argparse.SUPPRESS)  # hidden: the launcher refuses it (launcher_translate)
        _mode_switches(q)
        q.add_argument("command", nargs="*", metavar="-- [container|direct [options] --] PRIMUS_ARGS",
                       help="after --: the per-node entry (container or direct, with its options, then --) and the Primus args")


def _node_agent(p, engine):
    p.add_argument("plan_file", nargs="?", help="the job's plan file (names only)")
    p.add_argument("--cleanup", metavar="JOB", help="remove this Slurm job's containers on this node, then exit")


def _complete(p, engine):
    p.add_argument("kind", choices=["containers", "jobs", "names"], help="what to list, one per line")


# name -> (help, example) for every command a person types, in --help's order; None: hidden
# (node-agent: started by srun on each Slurm node; __complete: the completion scripts' TAB).
COMMANDS: dict[str, tuple[str, str] | None] = {
    "check": ("validate config, env policy, required secrets, devices and the engine", "primus-runner check --gpu none"),
    "plan": ("print what would run (--verbose: the fully resolved launch), secrets as ***, without side effects",
             "primus-runner plan --gpu none -- python train.py"),
    "up": ("run the job in a local Docker container and return its exit code", "primus-runner up --gpu none -- python train.py"),
    "shell": ("an interactive shell in the job's image, with the job's env, mounts, GPUs and secrets (up -it, the "
              "image's bash, else sh)", "primus-runner shell --gpu none"),
    "ps": ("list the runner's own containers (running and leftovers); --engine slurm: its jobs in the queue", "primus-runner ps --json"),
    "logs": ("print a run's output (running or finished, from any directory), a runner container's, or a Slurm job's "
             "from every node (rank by rank), masked",
             "primus-runner logs 20261201-103512-3fa9c1; primus-runner logs primus-1a2b3c4d -f; primus-runner logs 1234 -f --node 1"),
    "exec": ("run a command in one of your running runner containers (as docker exec), output masked",
             "primus-runner exec primus-1a2b3c4d -- nvidia-smi"),
    "down": ("stop and remove the runner's containers (only the runner's own)", "primus-runner down --all"),
    "runs": ("list past and running runs, newest first (their records: names only, no value)",
             "primus-runner runs -n 5; primus-runner runs show 20261201-103512-3fa9c1; primus-runner runs gc --older-than 30d"),
    "build": ("build a training image from images/<flavor>/", "primus-runner build --flavor rocm --tag my/primus:dev"),
    "submit": ("submit the job to Slurm, one container per node", "primus-runner submit -N 2 -t 4:00:00 --wait -- python train.py"),
    "status": ("a Slurm job's state and exit code", "primus-runner status 1234 --json"),
    "cancel": ("cancel a Slurm job and remove its containers on every node", "primus-runner cancel 1234"),
    "audit": ("scan containers, images, files or directories for secret values in scope", "primus-runner audit primus-1a2b3c4d ./slurm-logs"),
    "completion": ("print a shell completion script", "source <(primus-runner completion bash)"),
    "demo": ("run the built-in demo job locally (no registry, no GPU needed)", "primus-runner demo"),
    "trust": ("trust this directory's project files (.primus.yaml, .env, a Primus checkout's runner/.primus.yaml) "
              "as they are now: their secret references, endpoints and build paths then apply", "primus-runner trust --show"),
    "container": ("as primus-cli container: one container running the Primus direct launcher with the Primus args",
                  "primus-runner container --volume /data:/data -- train pretrain --config /data/exp.yaml"),
    "direct": ("as primus-cli direct: the Primus direct launcher on this host, no container, env policy applied",
               "primus-runner direct -- train pretrain --config exp.yaml"),
    "slurm": ("as primus-cli slurm: srun (default, waits, the job's code) or sbatch (submits, the job id)",
              "primus-runner slurm srun -N 2 -- train pretrain --config exp.yaml"),
    "node-agent": None,
    "__complete": None,
}
ARGUMENTS = {
    "check": _check, "plan": _plan, "up": _up, "shell": _shell, "ps": _ps, "logs": _logs, "exec": _exec, "down": _down,
    "runs": _runs, "build": _build, "submit": _submit, "status": _status, "cancel": _cancel, "audit": _audit,
    "completion": _completion, "demo": _demo, "trust": _trust, "container": _container, "direct": _direct, "slurm": _slurm,
    "node-agent": _node_agent, "__complete": _complete,
}


def build_parser(scouted: Scouted | None = None) -> argparse.ArgumentParser:
    """The command line. With ``scouted`` naming a command, only that command's parser is built (a run
    parses one command; each parser argparse builds costs start-up); else every command is listed (the
    top level's help, an unknown command's did-you-mean) and, without ``scouted``, every command's
    arguments are configured (completion, tests)."""
    parser = _Parser(
        prog="primus-runner",
        description="Launch ML training jobs in containers (local Docker, CI, Slurm) without leaking a secret.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _global_options(parser, None)
    _top_switches(parser)
    parser.add_argument("--version", action="version", version=VERSION_TEXT)
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    _Parser.root, _Parser.scouted = parser, scouted
    only = scouted.command if scouted is not None and scouted.command in COMMANDS and not scouted.help else None
    for name, shown in COMMANDS.items():
        if only is not None and name != only:
            continue
        if shown is None:
            p = sub.add_parser(name)  # no help=: hidden from --help, completion and errors
        else:
            p = sub.add_parser(name, help=shown[0], description=shown[0], epilog=f"example:\n  {shown[1]}",
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        if scouted is None or scouted.command == name:
            if shown is not None:
                _global_options(p, argparse.SUPPRESS)  # also after the command, as docker/kubectl/gh accept them
            ARGUMENTS[name](p, scouted.engine if scouted else None)
    return parser
