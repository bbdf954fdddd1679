"""Typed options: what the command line asked for, as small frozen records (dataclasses where
``dataclasses.replace``/``fields`` reach them, else named tuples: cheaper to define at start-up).

``runner.cli`` turns argparse's namespace into these; nothing below the CLI
knows argparse exists. Each command takes only the dataclass it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Sources(NamedTuple):
    """Where configuration and values come from (the global options)."""

    config_file: str | None = None
    env_file: str | None = None
    trust_project: bool = False  # --trust-project: the project's own files as they are (runner.config.trust)


class BuildOptions(NamedTuple):
    """``primus-runner build`` (and the build behind ``up --build``)."""

    sources: Sources = Sources()
    flavor: str | None = None
    base: str | None = None
    tag: str | None = None
    build_args: tuple[str, ...] = ()
    no_cache: bool = False
    dry_run: bool = False
    secrets: tuple[str, ...] = ()  # names exposed to RUN --mount=type=secret,id=NAME
    file: str | None = None  # a user's Dockerfile instead of images/<flavor>/
    context: str | None = None
    pull: str | None = None  # missing | always | never
    push: bool = False  # push the built tag to its registry, with the pull's credentials


@dataclass(frozen=True)
class LaunchFlags:
    """LAUNCH options from the command line (the highest config layer)."""

    image: str | None = None
    env: tuple[str, ...] = ()
    volume: tuple[str, ...] = ()
    device: tuple[str, ...] = ()
    gpu: str | None = None
    gpus: str | None = None  # all | N | LIST (indices, ranges, UUIDs)
    name: str | None = None
    workdir: str | None = None
    shm_size: str | None = None
    memory: str | None = None
    cpus: str | None = None
    network: str | None = None
    ipc: str | None = None
    user: str | None = None
    pull: str | None = None  # --pull missing|always|never
    entrypoint: str | None = None  # --entrypoint PROGRAM ("" resets the image's)
    labels: tuple[str, ...] = ()  # --label KEY=VALUE, as given (the plan checks them)
    platform: str | None = None  # --platform OS/ARCH[/VARIANT]
    container_engine: str | None = None  # --engine podman: container.engine (docker | podman)
    # The launcher's container options the runner models (docker run's own names in the config).
    privileged: bool | None = None
    cap_add: tuple[str, ...] = ()
    security_opt: tuple[str, ...] = ()
    group_add: tuple[str, ...] = ()
    ulimit: tuple[str, ...] = ()
    hostname: str | None = None
    # Other docker run options, passed through as given: (name, value or None for a boolean).
    run_options: tuple[tuple[str, str | None], ...] = ()
    # The job runs as a host process (direct, here or on each Slurm node): it starts from the
    # user's environment (runner.host_env), not from the forwarded names alone.
    host_process: bool = False

    def config_layer(self) -> dict:
        """The flags as a config layer, so they merge and validate like a file."""
        options: dict = {}
        for key, value in (
            ("image", self.image), ("name", self.name), ("workdir", self.workdir), ("shm-size", self.shm_size),
            ("memory", self.memory), ("network", self.network), ("ipc", self.ipc), ("user", self.user),
        ):
            if value is not None:
                options[key] = value
        if self.cpus is not None:
            options["cpus"] = _number(self.cpus)
        if self.volume:
            options["volume"] = list(self.volume)
        if self.device:
            options["device"] = list(self.device)
        if self.hostname is not None:
            options["hostname"] = self.hostname
        if self.privileged is not None:
            options["privileged"] = self.privileged
        for key, values in (("cap-add", self.cap_add), ("security-opt", self.security_opt), ("group-add", self.group_add),
                            ("ulimit", self.ulimit)):
            if values:
                options[key] = list(values)
        layer: dict = {"container": {"options": options}} if options else {}
        if self.gpu is not None:
            layer.setdefault("container", {})["gpu"] = self.gpu
        if self.gpus is not None:
            layer.setdefault("container", {})["gpus"] = self.gpus
        if self.pull is not None:
            layer.setdefault("container", {})["pull"] = self.pull
        if self.container_engine is not None:
            layer.setdefault("container", {})["engine"] = self.container_engine
        return layer


def _number(text: str):
    try:
        return float(text) if "." in text else int(text)
    except ValueError:
        return text  # the schema reports it


def _engine_flags_for(options, engine: str):
    """The typed flags ``engine`` declared for this launch (its ``cli_flags``), or ``None``."""
    return next((flags for name, flags in options.engine_flags if name == engine), None)


class RunOptions(NamedTuple):
    """One launch (``up``, ``submit``): what to run and what to do around it."""

    command: tuple[str, ...]
    sources: Sources = Sources()
    flags: LaunchFlags = LaunchFlags()
    dry_run: bool = False
    detach: bool = False  # up --detach; submit without --wait
    keep: bool = False
    build: bool = False
    audit: bool = False
    report: str | None = None
    # Each engine's own flags, typed by the engine (runner.engines.slurm.flags): (engine name, flags).
    engine_flags: tuple[tuple[str, object], ...] = ()
    pull: str | None = None  # missing | always | never; None: container.pull from config (default missing)
    debug: bool = False  # the launcher's --debug: PRIMUS_LOG_LEVEL=DEBUG for the job
    interactive: bool = False  # up -i: the user's stdin goes to the job
    tty: bool = False  # up -t: the job gets a terminal (the user's, in raw mode)
    compact: bool = False  # plan: the short view (what runs, where, env names, GPUs); --verbose gives the full one

    engine_flags_for = _engine_flags_for


class CheckOptions(NamedTuple):
    command: tuple[str, ...]
    sources: Sources = Sources()
    flags: LaunchFlags = LaunchFlags()
    engine: str = "docker"
    online: bool = False
    timeout: float = 10.0


class Selection(NamedTuple):
    """What an engine's verb (``ps``, ``logs``, ``down``, ``exec``, ``status``, ``cancel``) acts on:
    container names or a job id, and the command's own switches."""

    sources: Sources = Sources()
    names: tuple[str, ...] = ()  # containers (logs, down, exec) or the job id (status, cancel)
    all: bool = False
    follow: bool = False
    all_users: bool = False  # every user's runner containers, not only the invoking user's
    tail: int | None = None  # logs: only the last N lines
    dry_run: bool = False  # down, cancel: say what would be done, do nothing
    node: str | None = None  # logs of a multi-node job: only this rank or node
    command: tuple[str, ...] = ()  # exec: the command to run
    interactive: bool = False  # exec -i: the user's stdin is the command's
    tty: bool = False  # exec -t: the command gets a terminal
    # exec: the job's secrets as its run resolves them, and the container they are for (its run's record)
    job_secrets: tuple = ()  # ((name, Secret), ...)
    job_container: str | None = None
    engine: str | None = None  # --engine: a registry name; None: the first engine declaring the verb


class ModeOptions(NamedTuple):
    """The Primus launcher's modes (``container``, ``slurm``, ``direct``) as the command line gave them.

    ``primus_args`` are the Primus CLI's arguments (after ``--``); ``runner.commands.launcher``
    turns them into the inner command and a ``RunOptions`` for an engine."""

    mode: str  # container | slurm | direct
    primus_args: tuple[str, ...]
    sources: Sources = Sources()
    flags: LaunchFlags = LaunchFlags()
    dry_run: bool = False
    debug: bool = False
    clean: bool = False
    all_users: bool = False
    gpus: str | None = None  # the launcher's --gpus: all | N | LIST (0: no GPU devices, as primus-cli)
    detach: bool = False
    launcher: str = "srun"  # slurm: srun (attached, the job's code) | sbatch (submit, the job id)
    entry: str = "container"  # slurm: the per-node entry, container | direct
    engine_flags: tuple[tuple[str, object], ...] = ()  # as RunOptions.engine_flags (slurm: the launcher's Slurm flags)
    pull: str | None = None
    direct_args: tuple[str, ...] = ()  # the launcher's direct options (--single, --patch …), for primus-cli-direct.sh
    notices: tuple[str, ...] = ()  # what the translation wants said (an option without effect …)

    engine_flags_for = _engine_flags_for

