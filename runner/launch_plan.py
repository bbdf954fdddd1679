"""The ``LaunchPlan`` type: one launch, fully resolved, as every engine and each Slurm node receive it:
a neutral ``JobSpec`` (what any engine runs) and a ``ContainerSpec`` (what a container adds).

Kept apart from planning (``runner.plan``: config, flags and environment in, a plan out):
a Slurm node agent rebuilds a plan from its plan file on every node, and needs this type,
not the config layers and parsers planning loads.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from typing import ClassVar, Mapping

from runner import LABEL_VERSION  # noqa: F401  (the version label: for its importers)
from runner.gpus import Gpu
from runner.policy import EnvDecision
from runner.secrets import MASK, Secret
from runner.trackers.base import RECORDED_FIELDS
from runner.trackers.config import TrackerPlan

LABEL = "io.primus-runner.managed"
LABEL_JOB = "io.primus-runner.job"
LABEL_OWNER = "io.primus-runner.owner"  # the launching uid: ps/logs/down/--clean act on the caller's own


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    mode: str = "rw"
    named_volume: bool = False

    def __str__(self) -> str:
        return f"{self.source}:{self.target}:{self.mode}"


@dataclass(frozen=True)
class JobSpec:
    """The job any engine runs, container or not: its command, name, each variable's decision (a
    secret's value as a ``Secret``), its trackers, the GPUs it asked for and was given, its
    directory and how it stops. A host process (the process engine) is given this alone."""

    command: tuple[str, ...]
    name: str
    gpu: str  # the GPU flavor: rocm | cuda | none
    env: tuple[EnvDecision, ...]
    trackers: TrackerPlan
    gpus: tuple[Gpu, ...] = ()  # the chosen GPUs (empty: none, or all of a host whose topology is not read here)
    gpu_select: str = "all"  # what was asked: all | N | LIST (under Slurm N is per node)
    host_root: str = "/"  # where /sys, /dev and /proc/driver/nvidia were read (PRIMUS_RUNNER_HOST_ROOT)
    workdir: str | None = None
    stop_timeout: float = 10.0  # SIGKILL this long after the stop signal (a container's stop timeout)
    # A host process (direct) starts from the user's environment less the secrets these
    # passthrough.secrets entries name (runner.host_env); False: the forwarded names only.
    inherit_env: bool = False
    secret_rules: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    config_files: tuple[str, ...] = ()

    @property
    def forwarded(self) -> list[EnvDecision]:
        return [d for d in self.env if d.forwarded]

    @property
    def skipped(self) -> list[EnvDecision]:
        return [d for d in self.env if not d.forwarded]

    def public_env(self) -> dict[str, str]:
        """Forwarded non-secret variables: safe for ``docker inspect`` and files."""
        return {d.name: str(d.value) for d in self.forwarded if not d.secret}

    def secret_env(self) -> dict[str, Secret]:
        return {d.name: d.value for d in self.forwarded if d.secret and isinstance(d.value, Secret)}

    def with_env(self, pairs: Mapping[str, str], reason: str = "computed") -> "JobSpec":
        """A copy with runner-computed, non-secret variables added or replaced (run ids, node rank)."""
        kept = tuple(d for d in self.env if d.name not in pairs)
        added = tuple(EnvDecision(k, True, False, reason, "runner", v) for k, v in pairs.items())
        return replace(self, env=kept + added)


@dataclass(frozen=True)
class ContainerSpec:
    """The container a container engine (Docker, Podman, each Slurm node's agent) runs the job in:
    the image, mounts, devices and ``docker run`` options. An engine without a container never reads
    it, and refuses the launch flags that set it (``flag_names``)."""

    image: str
    mounts: tuple[Mount, ...] = ()
    devices: tuple[str, ...] = ()
    gpu_request: str | None = None  # the engine's GPU request form (a CDI/driver request), from the GPU flavor
    cap_add: tuple[str, ...] = ()
    group_add: tuple[str, ...] = ()
    security_opt: tuple[str, ...] = ()
    ulimits: tuple[str, ...] = ()
    privileged: bool = False
    hostname: str | None = None
    # docker run options the runner passes through as given (runner.engines.docker.run_options)
    run_options: tuple[tuple[str, str | None], ...] = ()
    ipc: str | None = None
    network: str | None = None
    user: str | None = None
    shm_size: str | None = None
    memory: str | None = None
    cpus: float | None = None
    secrets_via: str = "stdin"
    pull: str = "missing"  # when the engine pulls the image: missing | always | never
    container_engine: str = "auto"  # container.engine: auto | docker | podman (every Slurm node uses it too)
    labels: tuple[tuple[str, str], ...] = ()  # the user's (--label), then the runner's own
    entrypoint: str | None = None  # --entrypoint: replaces the image's ("" clears it); None: the image's
    platform: str | None = None  # --platform: the image variant the engine must run (OS/ARCH[/VARIANT])

    # The launch flag (a ``LaunchFlags`` field) that sets a field, where it is not the field's own name.
    FLAG_OF: ClassVar[Mapping[str, str]] = {"mounts": "volume", "devices": "device", "ulimits": "ulimit"}

    @classmethod
    def flag_names(cls) -> frozenset[str]:
        """The launch flags that set a container field (each field's own name, or the one ``FLAG_OF``
        gives; a field no flag sets names none): an engine that runs no container cannot carry them out."""
        return frozenset(cls.FLAG_OF.get(f.name, f.name) for f in fields(cls))


# The plan's fields in the order its JSON has always listed them (``plan --json``, the Slurm plan
# file): one flat document of both specs, so neither output changed shape when the plan was split.
# ``tests/unit/test_launch_plan.py`` holds it to every field of both, each once.
RECORD_ORDER = (
    "image", "command", "name", "gpu", "mounts", "devices", "gpu_request", "gpus", "gpu_select", "host_root",
    "cap_add", "group_add", "security_opt", "ulimits", "privileged", "hostname", "run_options", "ipc", "network",
    "user", "workdir", "shm_size", "memory", "cpus", "secrets_via", "stop_timeout", "pull", "container_engine",
    "labels", "entrypoint", "platform", "inherit_env", "secret_rules", "notices", "config_files",
)


@dataclass(frozen=True)
class LaunchPlan:
    """One launch, fully resolved: the job (``JobSpec``, what any engine runs) and the container it
    runs in (``ContainerSpec``, what a container engine adds). Every engine turns it into its own
    request; one without a container builds its request from ``job`` alone."""

    job: JobSpec
    container: ContainerSpec

    def with_env(self, pairs: Mapping[str, str], reason: str = "computed") -> "LaunchPlan":
        """The plan with its job's ``with_env``: runner-computed variables added or replaced."""
        return replace(self, job=self.job.with_env(pairs, reason))

    def record(self) -> dict:
        """Every field of both specs as one flat JSON document, from the dataclasses themselves: the one
        serialisation of a plan.

        The environment is NAMES only (with their secret flag and why they are
        forwarded): values are never part of a record. A Slurm node rebuilds the
        plan from it with ``from_record`` and its own environment.
        """
        values = {f.name: getattr(spec, f.name) for spec in (self.job, self.container) for f in fields(spec)}
        doc = {key: _jsonable(values[key]) for key in RECORD_ORDER}
        doc["env"] = [{"name": d.name, "secret": d.secret, "reason": d.reason} for d in self.job.forwarded]
        doc["trackers"] = {k: _jsonable(getattr(self.job.trackers, k)) for k in RECORDED_FIELDS}
        return doc

    @classmethod
    def from_record(cls, doc: Mapping, values: Mapping[str, str | Secret]) -> "LaunchPlan":
        """The plan a ``record`` describes, with each forwarded name's value from ``values``
        (names without a value are left out; the caller reports them)."""
        env = tuple(
            EnvDecision(e["name"], True, bool(e["secret"]), e.get("reason", "plan"), "env", values[e["name"]])
            for e in doc["env"] if values.get(e["name"]) is not None
        )
        trackers = TrackerPlan(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc["trackers"].items()})
        job = _from_fields(JobSpec, doc, env=env, trackers=trackers, gpus=tuple(Gpu(**g) for g in doc.get("gpus", ())))
        container = _from_fields(ContainerSpec, doc, mounts=tuple(Mount(**m) for m in doc["mounts"]))
        return cls(job, container)

    def to_dict(self) -> dict:
        """The redacted, JSON-ready form (``plan --json``): secret values are ``***``."""
        job = self.job
        doc = self.record()
        doc.pop("stop_timeout", None)
        doc["env"] = {d.name: (MASK if d.secret else d.value) for d in job.forwarded}
        doc["secrets"] = [d.name for d in job.forwarded if d.secret]
        doc["skipped"] = [{"name": d.name, "reason": d.skip_reason} for d in job.skipped]
        doc["env_sources"] = {d.name: {"reason": d.reason, "source": d.source} for d in job.forwarded}
        doc["labels"] = dict(self.container.labels)
        doc["gpus"] = [g.to_dict() for g in job.gpus]
        doc["trackers"] = {
            "framework": job.trackers.framework,
            "enabled": list(job.trackers.enabled),
            "overrides": list(job.trackers.overrides),
            "override_sources": [{"override": token, "from": where} for token, where in job.trackers.override_sources],
            "run_name": job.trackers.run_name,  # the run the runner creates (trackers' run_name_key)
        }
        return doc


def _from_fields(spec: type, doc: Mapping, **built):
    """``spec`` from a record's keys of its own fields (lists back to tuples), with ``built`` as given."""
    kwargs = {f.name: _tuples(doc[f.name]) for f in fields(spec) if f.name in doc and f.name not in built}
    return spec(**kwargs, **built)


def _tuples(value):
    return tuple(tuple(v) if isinstance(v, list) else v for v in value) if isinstance(value, list) else value


def _jsonable(value):
    if is_dataclass(value):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, Secret):
        return MASK
    return value
