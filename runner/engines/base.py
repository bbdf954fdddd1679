"""The engine protocol: what every way of running a plan (Docker or Podman, Slurm,
and the next ones) implements, so the run pipeline never changes for a new one.

Modelled on TorchX's schedulers: ``request(plan)`` is pure and returns the
engine's own request object, whose ``render()`` is exactly what ``--dry-run``
prints; ``launch`` only executes a request; ``watch`` follows it to its end.
The steps around a launch (tracker handshake, CI groups, summary, report,
audit, exit code) live once, in ``runner.session.pipeline``.

Adding an engine: see the checklist in docs/architecture.md.
"""

from __future__ import annotations

import importlib
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from runner.config import Config
    from runner.options import LaunchFlags, RunOptions, Selection
    from runner.launch_plan import LaunchPlan
    from runner.secrets import SecretScope
    from runner.secrets.scan import Finding
    from runner.ui import Output

TAIL_LIMIT = 64 << 20  # masked output kept for the tracker handshake's log upload


class Request(Protocol):
    """An engine's own, fully resolved launch request (container config, batch script …)."""

    def render(self) -> str:
        """The dry-run text: everything that would be sent, names only, never a value."""

    def to_dict(self) -> dict:
        """The dry-run JSON (``request`` in ``--json``)."""

    def with_run_env(self, pairs: dict[str, str]) -> "Request":
        """The same request with the tracker handshake's values (run ids) set by name."""


class Launched:
    """A launched job: its id and name, and the engine's own state for ``watch``."""

    def __init__(self, id: str, name: str, state: Any = None, still_running: bool = False):
        self.id, self.name, self.state = id, name, state
        self.still_running = still_running  # the runner stopped following; the job goes on (its tracker run too)


class Tail:
    """The last ``limit`` bytes of the job's masked output (for the tracker's log upload)."""

    def __init__(self, limit: int = TAIL_LIMIT):
        self.limit = limit
        self._parts: deque[bytes] = deque()
        self._size = 0

    def add(self, data: bytes) -> None:
        self._parts.append(data)
        self._size += len(data)
        while self._size - len(self._parts[0]) >= self.limit:
            self._size -= len(self._parts.popleft())

    def bytes(self) -> bytes:
        return b"".join(self._parts)[-self.limit:]

    def kept_in(self) -> int | None:
        """The open file that keeps the output on the host (the run's log), None when nothing does."""
        return None

    def keep(self, data: bytes) -> None:
        """``data`` (masked) into that file only: what follows a detached job keeps no tail in memory."""


class RunPlacement(NamedTuple):
    """What the run store (``runner.runs``) decided for one launch that its engine uses; a
    launch with no run store (a node's agent, a test) has none of them."""

    id: "str | None" = None  # the run's id: labels, the Slurm plan file
    job_dir: "Path | None" = None  # an engine on nodes: where the job's files go (every node sees it)
    node_cache: "dict | None" = None  # an engine on nodes: what each node mounts as its cache ({dir, key})
    lock_fd: "int | None" = None  # the descriptor holding the run's lock: a detached job's keeper holds it too


class RunContext:
    """What the pipeline hands an engine for one launch."""

    def __init__(self, options: "RunOptions", scope: "SecretScope", out: "Output", settings: Any = None, tail: Tail | None = None,
                 lookup: Callable[[str], "str | None"] = lambda name: None, config: Any = None, run: RunPlacement | None = None,
                 dry_run: bool = False):
        self.options, self.scope, self.out = options, scope, out
        self.settings = settings  # the engine's own typed, validated options (``Engine.settings``)
        self.tail = Tail() if tail is None else tail
        self.lookup = lookup  # a variable's value: environment, then env file
        self.config = config  # the merged config: where each setting came from, for --verbose
        self.run = RunPlacement() if run is None else run
        self.dry_run = dry_run  # decided once, by the pipeline (the flag, or dry_run: true in the config)


class Connection(NamedTuple):
    """What ``launch`` gets beside the request: where it speaks (the output, masked) and the secret
    scope whose values it reveals at the last moment. No options, no config: nothing to decide with."""

    out: "Output"
    scope: "SecretScope"


class Engine(Protocol):
    name: str  # "docker", "slurm": the report's backend field
    audit_after: bool  # audit the finished job's files (True) or the started job (False)
    computed_env: tuple[str, ...]  # names the engine computes per launch (planned as such, never taken from the host)
    # Optional: the ``RunOptions`` switches of ``up`` it honours beyond the plan (``keep``, ``build``,
    # ``interactive``, ``tty``); the command line refuses the others for it (default: none).
    launch_options: tuple[str, ...]

    def settings(self, config: "Config", options: "RunOptions") -> Any:
        """The engine's own options from its config section and flags, typed and validated
        (``ConfigError`` with ``file:line``): what ``RunContext.settings`` holds."""

    def preflight(self, plan: "LaunchPlan", ctx: RunContext) -> None:
        """Fail (``EngineUnavailable``, ``ConfigError``) before a tracker run is created for a launch
        that cannot happen or must not (a refused registry login, a cluster that archives secrets)."""

    def request(self, plan: "LaunchPlan", ctx: RunContext) -> Request:
        """Pure: the engine's complete, validated request for this plan (``ConfigError`` for a value
        the engine would refuse). Built before the tracker handshake."""

    def resolve(self, request: Request, ctx: RunContext, dry_run: bool = False) -> Request:
        """The named step before launch for what only the engine or the image can tell (Docker:
        the engine kind, the image's entrypoint); a dry run only reads. Returns a new request."""

    def launch(self, request: Request, connection: "Connection") -> Launched:
        """Start exactly ``request``, adding nothing: it sees no options, config or context, only the
        request and the ``Connection``. On failure nothing it created is left behind."""

    def announce(self, launched: Launched, ctx: RunContext, detached: bool) -> None:
        """Tell the user what started (a container name, a job id and where its output goes)."""

    def group_title(self, launched: Launched, request: Request) -> str:
        """The CI log group the job's output goes into."""

    def dry_run(self, request: Request, ctx: RunContext) -> None:
        """Print what ``--dry-run`` shows for this engine."""

    def watch(self, launched: Launched, ctx: RunContext, on_running: "Callable[[], None] | None" = None) -> int:
        """Stream the job's masked output until it ends, clean up, return its exit code.
        ``on_running`` is called once the job runs (an engine that audits the running job)."""

    def audit(self, launched: Launched, ctx: RunContext) -> "list[Finding]":
        """Look for secret values where the job or the runner could have left them."""

    def finished(self, launched: Launched, ctx: RunContext, exit_code: int) -> dict:
        """Engine facts for the report and ``--json`` after a watched run (job id, state …)."""


class EngineBase:
    """What every engine has unless it says otherwise: the optional facts' defaults, written once.

    An engine subclasses this and overrides only what differs, so the session, the run store,
    ``check`` and the CLI read each fact as an attribute (never a probe with a default of its own).
    ``tests/unit/engines/test_base.py`` holds the defaults and finds no ``getattr`` probe of them."""

    audit_after = False  # audit the finished job's files (True) or the started job (False)
    computed_env: tuple[str, ...] = ()  # names the engine computes per launch (planned as such)
    # The ``RunOptions`` switches of ``up`` it honours beyond the plan (``keep``, ``build``,
    # ``interactive``, ``tty``); the command line refuses the others for it.
    launch_options: tuple[str, ...] = ()
    gpu_mode = "off"  # host: GPUs chosen on this host at plan time; node: each node chooses; off: none
    local_images = False  # pulls and builds on this host: `check` asks the registry and the builder
    dry_run_lists_unset = False  # its dry run shows the plan, which lists the names not set
    # Tracker outputs and the cache are mounts. False: a host process, which builds its request from the
    # plan's job alone and refuses every launch flag that sets a container field (``refuse_unhonoured``).
    runs_in_container = True
    inherits_env = False  # True: planned from the user's environment (a host process, runner.host_env)
    runs_on_nodes = False  # the job runs on other hosts (job directory, a cache per node, no runner log)
    job_dir_setting: "str | None" = None  # the setting that moves the job directory

    def claim(self, plan: "LaunchPlan", ctx: RunContext) -> "LaunchPlan":
        """The plan with what it chose taken for real (GPUs under a lock): decided once, before the request."""
        return plan

    def job_dir(self, config: "Config", run_id: str, name: str) -> "Path | None":
        return None  # no job directory

    def job_dir_unseen(self, path: "Path") -> "str | None":
        return None

    def record_started(self, launched: Launched, job_dir: "Path | None") -> dict:
        return {"job_id": launched.id}

    def record_ended(self, rec: dict) -> "tuple[int | None, str | None] | None":
        return None  # cannot be asked: the run store tells from the runner's own liveness

    def record_logs(self, rec: dict, out: "Output", *, follow: bool, tail: "int | None", node: "str | None") -> "int | None":
        return None  # no files of its own: the run store prints the log the runner kept

    def check_engine(self, config: "Config | None") -> "dict | None":
        return None  # nothing to ask: `check` reports no engine

    def refusals(self, plan: "LaunchPlan", config: "Config") -> list:
        """The problems a launch of ``plan`` meets on this host before anything starts (``up`` stops on
        them, ``check`` reports them, a dry run names them): none unless the engine runs here."""
        return []

    def refuse_unhonoured(self, flags: "LaunchFlags") -> None:
        """One usage error (exit 2) naming every launch flag given that this engine cannot carry out:
        it never runs a job without what the command line asked for. Which they are follows from the
        plan's types: without a container, each flag that sets a ``ContainerSpec`` field; without GPU
        selection (``gpu_mode`` off), ``--gpus``."""
        import dataclasses

        from runner.launch_plan import ContainerSpec

        cannot = (ContainerSpec.flag_names() if not self.runs_in_container else frozenset()) | \
            ({"gpus"} if self.gpu_mode == "off" else frozenset())
        dropped = [f.name for f in dataclasses.fields(flags) if f.name in cannot and getattr(flags, f.name) not in (None, (), False)]
        if dropped:
            from runner.errors import UsageError

            named = ", ".join(FLAG_SPELLING.get(name, "--" + name.replace("_", "-")) for name in dropped)
            them = "them" if len(dropped) > 1 else "it"
            raise UsageError(f"the {self.name} engine cannot honour {named}: it would run the job without {them}",
                             hint=f"drop {them}, or launch with --engine docker")

    @staticmethod
    def options() -> "tuple[Option, ...]":
        """Its own command-line options, as data; the CLI turns them into argparse."""
        return ()

    def cli_flags(self, values: "Mapping[str, Any]", command: str) -> Any:
        """Its typed flags from the parsed values (option dest -> value), or None (no flags)."""
        return None


# The command-line spelling of the ``LaunchFlags`` fields whose flag is not ``--`` plus the field's name.
FLAG_SPELLING = {"labels": "--label", "run_options": "docker run options", "cap_add": "--cap-add",
                 "security_opt": "--security-opt", "group_add": "--group-add", "shm_size": "--shm-size"}


class Option(NamedTuple):
    """One command-line option an engine declares (TorchX ``runopts``): data, which ``runner.cli``
    alone turns into argparse. ``flags`` as typed (``("-N", "--nodes")``); ``commands`` it is on;
    ``short_on``: the commands that take the short forms too (the others the long ones only)."""

    flags: tuple[str, ...]
    help: str
    commands: tuple[str, ...]
    dest: "str | None" = None
    type: "str | None" = None  # "int", or None for a string
    metavar: "str | None" = None
    switch: bool = False  # takes no value (store_true)
    group: str = ""  # the help section it is listed under
    short_on: tuple[str, ...] = ()


class delegate:
    """An engine method written as a function of another module, imported on its first call: an
    engine class says ``ps = delegate("runner.engines.slurm.verbs")`` and loads that module only
    when the command runs (``getattr(engine, "ps")`` imports nothing). ``function`` defaults to the
    attribute's own name."""

    def __init__(self, module: str, function: str | None = None):
        self.module, self.function = module, function

    def __set_name__(self, owner, name: str) -> None:
        self.function = self.function or name

    def __get__(self, engine, owner=None) -> Callable:
        module, function = self.module, self.function

        def call(*args, **kwargs):
            return getattr(importlib.import_module(module), function)(*args, **kwargs)

        call.__name__ = call.__qualname__ = function
        call.__doc__ = f"{module}.{function}"
        return call


# The commands that act on what an engine started, by name: each engine declares those it
# supports as methods of these names (``Verbs``); the registry finds them (``runner.engines.verb``).
VERBS = ("ps", "logs", "down", "exec", "status", "cancel")


class Verbs(Protocol):
    """The optional per-engine commands. Each takes the command's ``Selection`` and the
    ``Output`` and returns the exit code; an engine that lacks one simply does not define it
    (the command then exits 2 naming the engines that have it).

    ``claims(name)`` (optional too): whether ``name`` is one of this engine's own ids (a Slurm
    job id), so ``logs NAME`` reaches the engine that knows it without ``--engine``."""

    def ps(self, sel: "Selection", out: "Output") -> int:
        """List the runner's own jobs or containers on this engine (the caller's, unless ``all_users``)."""

    def logs(self, sel: "Selection", out: "Output") -> int:
        """Print one job's or container's output (``sel.names[0]``), masked; ``follow``/``tail``/``node``."""

    def down(self, sel: "Selection", out: "Output") -> int:
        """Stop and remove the runner's own containers (``names`` or ``all``); ``dry_run`` says what."""

    def exec(self, sel: "Selection", out: "Output") -> int:
        """Run ``sel.command`` in the running container ``sel.names[0]``, output masked; its exit code."""

    def status(self, sel: "Selection", out: "Output") -> int:
        """The state and exit code of job ``sel.names[0]``."""

    def cancel(self, sel: "Selection", out: "Output") -> int:
        """Stop job ``sel.names[0]`` and what it started; ``dry_run`` says what."""

    def claims(self, name: str) -> bool:
        """Whether ``name`` is this engine's kind of id."""


class Recorded(Protocol):
    """What the run store (``runner.runs``) asks an engine about its runs, so a new engine needs no
    edit there. All optional: ``EngineBase`` holds the defaults said here.

    ``runs_on_nodes`` (default False): the job runs on other hosts, so its files go to a job
    directory they all see, each node mounts its own cache, and the runner keeps no log of its
    output (it is in the job's files). ``runs_in_container`` (default True): tracker outputs and the
    cache are mounts (False: a host process writes where its paths say). ``job_dir_setting``: the
    setting that moves the job directory, named when the nodes do not see the default one."""

    runs_on_nodes: bool
    runs_in_container: bool
    job_dir_setting: str

    def job_dir(self, config: "Config", run_id: str, name: str) -> "Path | None":
        """Where the job's files go; one under the run's own directory is checked with ``job_dir_unseen``
        (default: no job directory)."""

    def job_dir_unseen(self, path: "Path") -> "str | None":
        """Why the nodes do not see ``path`` (None: they do, or it cannot be told)."""

    def record_started(self, launched: Launched, job_dir: "Path | None") -> dict:
        """The record's fields once the job runs (default: ``job_id`` = ``launched.id``; a container's
        are the run store's own: its name, id and engine socket)."""

    def record_ended(self, rec: dict) -> "tuple[int | None, str | None] | None":
        """A detached job's end, asked once: (exit code, note), or None while it runs or cannot be asked."""

    def record_logs(self, rec: dict, out: "Output", *, follow: bool, tail: "int | None", node: "str | None") -> int:
        """``logs RUN`` from the engine's own files (default: the run's log the runner kept)."""


class Flags(Protocol):
    """An engine's own command-line flags, so a new engine's flags need no edit in ``runner.cli`` or
    ``runner.options``. Both optional (``EngineBase``: none); the CLI asks every registered engine on
    ``submit`` and the launcher's ``slurm srun|sbatch``, the one ``--engine`` names on ``up``/``plan``.
    Slurm's: ``runner.engines.slurm.flags``."""

    def options(self) -> "tuple[Option, ...]":
        """The flags, as data: ``runner.cli.engine_options`` alone makes argparse of them."""

    def cli_flags(self, values: "Mapping[str, Any]", command: str) -> Any:
        """The parsed values (a plain mapping, option dest -> value) as the engine's own frozen dataclass,
        or None; the launch carries it in ``RunOptions.engine_flags`` and the engine reads it back with
        ``engine_flags_for(name)``."""
