"""A parsed launcher invocation (``launcher_args.ModeArgs``) as the runner's typed options.

``container``'s docker run options land on the typed config where the runner models them
(so policy, masking and the create-body check apply to them as to a ``.primus.yaml``),
are passed through to the Engine API otherwise (``runner.engines.docker.run_options``),
and are refused only where they would break a secret guarantee or the runner's own
lifecycle, with the reason and the fix. ``slurm``'s flags go to ``sbatch`` as given; the
runner reads from them only what it must know itself (the node count, GPUs per node,
where the output goes).
"""

from __future__ import annotations

import re
from dataclasses import replace

from runner.cli.launcher_args import ModeArgs
from runner.engines.docker import run_options
from runner.errors import ConfigError, UsageError
from runner.engines.slurm.flags import NAME as SLURM, SlurmFlags
from runner.options import LaunchFlags, ModeOptions, Sources

_SCALAR = {"image": "image", "name": "name", "user": "user", "workdir": "workdir", "network": "network", "ipc": "ipc",
           "shm-size": "shm_size", "memory": "memory", "cpus": "cpus", "hostname": "hostname", "entrypoint": "entrypoint",
           "platform": "platform"}
_LIST = {"volume": "volume", "device": "device", "cap-add": "cap_add", "security-opt": "security_opt",
         "group-add": "group_add", "ulimit": "ulimit"}


def mode_options(margs: ModeArgs, sources: Sources, dry_run: bool, debug: bool) -> ModeOptions:
    """The invocation as ``ModeOptions``; ``dry_run``/``debug`` are the global ``--dry-run``/``--debug``."""
    notices: list[str] = []
    flags, extra = container_flags(margs.options, margs.env, notices) if margs.mode != "direct" and margs.entry != "direct" \
        else (LaunchFlags(env=tuple(margs.env)), {})
    slurm = ((SLURM, replace(slurm_flags(margs.slurm_args, margs.launcher), entry=margs.entry)),) if margs.mode == "slurm" else ()
    direct_dry_run = margs.mode == "direct" and margs.dry_run
    return ModeOptions(
        margs.mode, tuple(margs.primus_args), sources=sources, flags=flags,
        dry_run=dry_run or (margs.dry_run and not direct_dry_run), debug=debug or margs.debug,
        clean=margs.clean, all_users=margs.all_users, gpus=extra.get("gpus"), detach=bool(extra.get("detach")),
        launcher=margs.launcher, entry=margs.entry, engine_flags=slurm, pull=extra.get("pull"),
        direct_args=tuple(extra.get("direct_args", ()) + tuple(margs.direct_args)), notices=tuple(notices),
    )


def container_flags(options: list, env: list, notices: list[str]) -> tuple[LaunchFlags, dict]:
    """(the typed flags, the rest: gpus, pull, detach, direct args) from ``container``'s options."""
    scalars: dict = {}
    lists: dict[str, list] = {v: [] for v in _LIST.values()}
    passthrough: list[tuple[str, str | None]] = []
    extra: dict = {}
    privileged = None
    for name, value in options:
        if name in _SCALAR:
            scalars[_SCALAR[name]] = _value(name, value)
        elif name in _LIST:
            lists[_LIST[name]].append(_value(name, value))
        elif name == "mount":
            lists["volume"].append(_mount(_value(name, value)))
        elif name == "privileged":
            privileged = value != "false"
        elif name == "gpus":
            extra["gpus"] = _value(name, value)  # its meaning belongs to the GPU selection
        elif name == "pull":
            extra["pull"] = _choice(name, _value(name, value), ("missing", "always", "never"))
        elif name == "detach":
            extra["detach"] = value != "false"
        elif name in run_options.NOOP:
            notices.append(f"--{name}: {run_options.NOOP[name]}")
        elif name in run_options.REFUSED:
            reason, fix = run_options.REFUSED[name]
            raise UsageError(f"container --{name} is refused: {reason}", hint=fix)
        elif name in run_options.PASSTHROUGH:
            if name not in run_options.BOOLEAN and value is None:
                raise UsageError(f"--{name} needs a value", hint=f"--{name} VALUE")
            problem = run_options.problem(name, value)
            if problem:
                raise UsageError(problem, hint="the value as docker run takes it")
            passthrough.append((name, value))
        elif name == "help":
            raise UsageError("--help goes before the -- of the mode", hint="primus-runner container --help")
        else:
            raise UsageError(f"--{name} is not a docker run option (docker would refuse it too)",
                             hint="see `docker run --help`; the direct launcher's options go after --: container -- --OPTION … -- <Primus args>")
    flags = LaunchFlags(
        env=tuple(env), volume=tuple(lists["volume"]), device=tuple(lists["device"]), cap_add=tuple(lists["cap_add"]),
        security_opt=tuple(lists["security_opt"]), group_add=tuple(lists["group_add"]), ulimit=tuple(lists["ulimit"]),
        privileged=privileged, run_options=tuple(passthrough), **scalars,
    )
    return flags, extra


def _value(name: str, value: str | None) -> str:
    if value is None:
        raise UsageError(f"--{name} needs a value", hint=f"--{name} VALUE")
    return value


def _choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise UsageError(f"--{name} {value!r}: one of {', '.join(choices)}")
    return value


def _mount(spec: str) -> str:
    """docker's ``--mount type=bind,source=S,target=T[,readonly]`` as the volume it is."""
    fields = {}
    for part in spec.split(","):
        key, eq, value = part.partition("=")
        fields[key.strip()] = value if eq else "true"
    source = fields.get("source") or fields.get("src")
    target = fields.get("target") or fields.get("destination") or fields.get("dst")
    if fields.get("type", "volume") not in ("bind", "volume") or not source or not target:
        raise UsageError(f"--mount {spec!r}: the runner takes bind and volume mounts as type=bind,source=SRC,target=DST[,readonly]",
                         hint=f"use --volume {spec}" if ":" in spec and "=" not in spec else "e.g. --mount type=bind,source=/data,target=/data")
    readonly = fields.get("readonly", fields.get("ro", "false")) in ("true", "1")
    return f"{source}:{target}:{'ro' if readonly else 'rw'}"


# --------------------------------------------------------------------------- slurm
# Slurm's short options and the long ones they mean (sbatch/srun); the others are long-only.
SHORT = {"N": "nodes", "n": "ntasks", "c": "cpus-per-task", "t": "time", "o": "output", "e": "error", "J": "job-name",
         "p": "partition", "A": "account", "w": "nodelist", "x": "exclude", "C": "constraint", "q": "qos", "G": "gpus",
         "D": "chdir", "d": "dependency", "W": "wait", "m": "distribution", "s": "oversubscribe", "i": "input", "a": "array",
         "b": "begin", "M": "clusters", "k": "no-kill", "H": "hold", "l": "label", "u": "unbuffered", "K": "kill-on-bad-exit",
         "v": "verbose", "Q": "quiet", "S": "core-spec", "L": "licenses", "F": "nodefile", "B": "extra-node-info", "O": "overcommit"}
BOOLEAN = {"exclusive", "requeue", "no-requeue", "overcommit", "contiguous", "hold", "parsable", "wait", "test-only",
           "spread-job", "use-min-nodes", "no-kill", "oversubscribe", "label", "unbuffered", "kill-on-bad-exit", "verbose",
           "quiet", "overlap", "exact", "pty", "ignore-pmi", "disable-status", "reboot", "nice", "no-allocate", "x11"}
SRUN_ONLY = {"label", "unbuffered", "kill-on-bad-exit", "pty", "mpi", "multi-prog", "cpu-bind", "overlap", "exact",
             "relative", "disable-status", "ntasks-per-gpu"}
# What would widen the environment the nodes get (values of every variable), or replace the batch script.
_REFUSED = {"export": "the runner exports exactly the allowlisted names, their values never on a command line",
            "export-file": "the runner exports exactly the allowlisted names, their values never on a command line",
            "get-user-env": "the runner exports exactly the allowlisted names, their values never on a command line",
            "wrap": "the runner's batch script is what runs on the nodes"}


def slurm_tokens(tokens: list[str]) -> list[tuple[str, str | None, list[str]]]:
    """Each flag as (long name, value or None, its tokens as given), by the launcher's rule:
    a value is the next token unless that starts with ``-``."""
    found = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("-") or token == "-":
            raise UsageError(f"slurm: {token!r} is not a Slurm flag (the Primus args go after --)",
                             hint="primus-runner slurm srun -N 2 -- train pretrain --config exp.yaml")
        if token.startswith("--"):
            name, eq, value = token[2:].partition("=")
            if eq:
                found.append((name, value, [token]))
                i += 1
                continue
        else:
            name = SHORT.get(token[1:2], token[1:2])
            if len(token) > 2:
                found.append((name, token[2:].lstrip("="), [token]))
                i += 1
                continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if name in BOOLEAN or nxt is None or nxt.startswith("-"):
            found.append((name, None, [token]))
            i += 1
        else:
            found.append((name, nxt, [token, nxt]))
            i += 2
    return found


def slurm_flags(tokens: list[str], launcher: str) -> SlurmFlags:
    """The user's Slurm flags as given (``args``), what the runner reads from them, and the
    srun-only ones (``srun_args``: on the step's srun line, as srun takes them)."""
    for token in tokens:
        if "\n" in token or "\r" in token or "--export" in token or "#SBATCH" in token:
            raise UsageError(f"slurm flag {token!r}: Slurm flags are one line each and never set --export",
                             hint="the runner exports exactly the allowlisted names; add names to container.options.env")
    parsed = slurm_tokens(tokens)
    args: list[str] = []
    srun_args: list[str] = []
    known: dict[str, str | None] = {}
    spelled: dict[str, str] = {}
    for name, value, given in parsed:
        if name in _REFUSED:
            raise UsageError(f"slurm --{name} is refused: {_REFUSED[name]}", hint="add names to container.options.env")
        (srun_args if name in SRUN_ONLY else args).extend(given)
        known[name] = value
        spelled[name.replace("-", "_")] = given[0].split("=")[0] if given[0].startswith("--") else given[0][:2]
    if srun_args and launcher == "sbatch":
        raise UsageError(f"{' '.join(srun_args)}: srun options, but this is slurm sbatch", hint="use slurm srun, or leave them out")
    _check_values(known, spelled)
    return SlurmFlags(
        nodes=_number(known.get("nodes")), gpus_per_node=_number(known.get("gpus-per-node"), typed=True),
        output=known.get("output"), error=known.get("error"), args=tuple(args), srun_args=tuple(srun_args),
        partition=None, time=None, account=None, exclusive=False, launcher=launcher,
    )


def _check_values(known: dict[str, str | None], spelled: dict[str, str]) -> None:
    """The values the runner reads or Slurm will parse, by the same rules as ``submit``'s flags and
    the config's keys (``runner.engines.slurm.values``), each named by the flag as given."""
    from runner.engines.slurm import values

    given = {name.replace("-", "_"): value for name, value in known.items() if value is not None}
    checked = {name: value for name, value in given.items() if values.checked(name)}
    problems = values.problems(checked, {name: spelled[name] for name in checked})
    if problems:
        raise ConfigError(problems)


def _number(value: str | None, typed: bool = False) -> int | None:
    from runner.engines.slurm import values

    return None if value is None else values.count(value, typed=typed)


def overridden(args: tuple[str, ...]) -> set[str]:
    """The long names of the Slurm options the user's flags set (a flag beats its config key)."""
    return {name for name, _, _ in slurm_tokens(list(args))}
