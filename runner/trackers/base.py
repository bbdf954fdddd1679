"""The tracker plug-in protocol, what a tracker sees of a launch, and the handshake it fills.

A tracker is one module of this package with the names below (``NAME``,
``RUN_ENV``, ``SETTINGS``, ``prefetch``, ``check``, ``begin``) and one line in
``runner.trackers.TRACKERS``. ``SETTINGS`` declares what it reads from the
``trackers:`` section and the environment; the schema, the switches and the
forwarded variables are derived from it (``runner.trackers.config``,
``runner.trackers.schema``). It reads the plan through ``TrackedPlan`` (a
structural type: trackers sit below the plan, whose settings they provide).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from runner.errors import Problem
from runner.policy import Classifier, Wanted

if TYPE_CHECKING:
    from runner.config import Config
    from runner.policy import EnvDecision
    from runner.secrets import Secret
    from runner.ui import Output

Finisher = Callable[[int, bytes], None]  # (exit code, masked output) once the job has ended; never raises


@dataclass(frozen=True)
class TrackerPlan:
    """What the ``trackers:`` section decided for a launch (``runner.trackers.config.analyze_trackers``)."""

    framework: str
    enabled: tuple[str, ...]
    settings: dict
    wanted: tuple[Wanted, ...] = ()
    overrides: tuple[str, ...] = ()
    # (override, file:line of the key that asked for it): an override comes only from a config file
    override_sources: tuple[tuple[str, str], ...] = ()
    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    run_name: str | None = None  # the MLflow run name the runner creates (None: MLflow off)
    wandb_mode: str = "online"
    config_hash: str = ""  # sha256 of the merged config, a tag on the tracker run

    def is_on(self, tracker: str) -> bool:
        return tracker in self.enabled


# The ``TrackerPlan`` fields a Slurm node needs to rebuild the plan (problems and warnings stay on the
# submitting host): what ``LaunchPlan.record()`` writes into the plan file.
RECORDED_FIELDS = ("framework", "enabled", "settings", "overrides", "run_name", "wandb_mode", "config_hash")


class TrackedJob(Protocol):
    """The part of ``runner.launch_plan.JobSpec`` the trackers read."""

    name: str
    trackers: TrackerPlan

    @property
    def forwarded(self) -> "Sequence[EnvDecision]": ...

    def public_env(self) -> Mapping[str, str]: ...

    def secret_env(self) -> "Mapping[str, Secret]": ...


class TrackedContainer(Protocol):
    """The part of ``runner.launch_plan.ContainerSpec`` the trackers read."""

    image: str
    mounts: "Sequence[Any]"  # runner.launch_plan.Mount: where a path the job writes is on the host


class TrackedPlan(Protocol):
    """The part of ``runner.launch_plan.LaunchPlan`` the trackers read: its job and its container."""

    job: TrackedJob
    container: TrackedContainer


class Handshake:
    """What a launch gets from the trackers before it starts, and reports back after."""

    def __init__(self, env: dict[str, str] | None = None, links: dict[str, str] | None = None, _finish: Finisher | None = None):
        self.env = {} if env is None else env  # e.g. MLFLOW_RUN_ID, WANDB_RUN_ID
        self.links = {} if links is None else links  # tracker -> run URL / path, for reports
        self._finish = _finish

    def finish(self, exit_code: int, masked_output: bytes = b"") -> None:
        if self._finish is not None:
            self._finish(exit_code, masked_output)


class Findings:
    """What the analysis of the ``trackers:`` section finds, gathered so every problem is reported at once."""

    def __init__(self):
        self.problems: list[Problem] = []
        self.warnings: list[str] = []
        self.notices: list[str] = []
        self.wanted: list[Wanted] = []


class Analysis:
    """What a tracker's ``needs`` sees of a launch it takes part in, and where it puts what it wants."""

    def __init__(self, declared: "TrackerSettings", framework: str, settings: Mapping[str, Any], lookup: Callable[[str], str | None],
                 config: "Config", settings_env: Mapping[str, str], found: Findings):
        self.declared = declared
        self.framework = framework  # as configured (``generic`` included)
        self.settings = settings  # the merged ``trackers:`` section
        self.lookup = lookup  # the value the job would see (literals, host, env file)
        self.config = config
        self.settings_env = settings_env  # variables set from ``trackers:`` keys: they beat the host's
        self.found = found

    @functools.cached_property
    def classifier(self) -> Classifier:
        return Classifier.from_config(self.config)

    def want(self, name: str, reason: str, required: bool = False) -> None:
        """Forward ``name`` when it is set (``required``: a problem when not). A declared
        credential the secret policy does not mask is never forwarded: the masker would not know it."""
        if name in self.declared.secrets and not self.classifier.is_secret(name):
            if self.lookup(name):
                self.found.warnings.append(
                    f"{name} is set but not forwarded: it is {self.declared.secret_kind} and the secret policy does not list it "
                    "(add it to passthrough.secrets)"
                )
            return
        self.found.wanted.append(Wanted(name, reason, required=required))


def want_names(analysis: Analysis) -> None:
    """The default ``needs``: every declared variable not set from a key, forwarded when set."""
    for name in analysis.declared.names:
        if name not in analysis.settings_env:
            analysis.want(name, f"tracker {analysis.declared.name}")


@dataclass(frozen=True)
class TrackerSettings:
    """What a tracker reads: its ``trackers:`` keys (JSON Schema of each), the key that turns
    it on per framework, the keys that set a variable, the variables it forwards when on, and
    which of them are credentials or say where credentials go."""

    name: str
    label: str  # how messages name it ("MLflow")
    keys: Mapping[str, dict] = field(default_factory=dict)  # trackers.<key> -> its JSON Schema
    metrics: Mapping[str, dict] = field(default_factory=dict)  # trackers.metrics.<key> (TorchTitan's block)
    # framework -> the key that turns it on: ``disable_X`` (on when false) or ``metrics.enable_X`` (on when true);
    # ``generic`` reads Megatron's; a framework not listed has it off
    switch: Mapping[str, str] = field(default_factory=dict)
    setting_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # framework -> trackers.<key> -> variable
    names: tuple[str, ...] = ()  # variables forwarded when it is on and they are set (credentials, endpoints, client settings)
    secrets: tuple[str, ...] = ()  # among ``names``: credentials forwarded only when the secret policy masks them
    secret_kind: str = "a tracker credential"  # how the warning about such an unmasked one names it
    endpoints: tuple[str, ...] = ()  # variables that say where (or how: TLS) its credentials are sent (an untrusted file may not set them)
    run_name_key: str | None = None  # the key naming the run the runner creates for it (None: it creates none)
    needs: Callable[[Analysis], None] = want_names  # what it wants when on: variables, problems, warnings
    when_off: Callable[[Analysis], None] | None = None  # warnings about its keys set while it is off
    order: int = 100  # its place in plans, in the environment and among problems (the handshake follows TRACKERS)
    # Its outputs and run ids, asked by the run store, the report and each Slurm node instead of its name:
    run_id: str | None = None  # the variable that holds the id of the run it logs to (MLFLOW_RUN_ID)
    requeue_env: Mapping[str, str] = field(default_factory=dict)  # set on each node when run_id is, unless set: a requeued job resumes the run
    outputs: Callable[[TrackedPlan], "list[tuple[str, str]]"] = lambda plan: []  # (setting, path inside the job) it writes
    # (variable, directory under the runner's container root): where it writes when the variable is unset, given by the runner
    output_dir_env: tuple[str, str] | None = None
    # The line printed after the job for one output on the host (path, the plan, its run id); None: the default line
    after_line: Callable[[Any, TrackedPlan, "str | None"], "str | None"] = lambda host, plan, run_id: None


class Tracker(Protocol):
    """One tracker (a module). ``plan.job.trackers.is_on(NAME)`` says whether it takes part in a launch."""

    NAME: str
    RUN_ENV: tuple[str, ...]  # the variables begin() may hand the job (an engine's request reserves them by name)
    SETTINGS: TrackerSettings  # its keys and variables (runner.trackers.config and .schema derive from it)

    def prefetch(self, plan: TrackedPlan) -> None:
        """Start whatever slow loading begin() will need, as soon as the plan exists."""

    def check(self, plan: TrackedPlan, timeout: float) -> dict:
        """``check --online``: {"tracker", "status": reachable|unauthorised|unreachable|not-installed|skipped, "detail"}."""

    def begin(self, plan: TrackedPlan, out: "Output", hs: Handshake) -> Finisher | None:
        """Before launch: create the run, put its ids in ``hs.env`` and its link in ``hs.links``;
        raise (``EngineUnavailable`` 1, ``CredentialRefused`` 2) before anything starts."""
