"""The ``LaunchPlan`` type: one launch, fully resolved, as every engine and each Slurm node receive it.

Kept apart from planning (``runner.plan``: config, flags and environment in, a plan out):
a Slurm node agent rebuilds a plan from its plan file on every node, and needs this type,
not the config layers and parsers planning loads.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Mapping

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
class LaunchPlan:
    """One launch, fully resolved: the image, the command, each variable's decision (a secret's
    value as a ``Secret``), the mounts, devices, GPUs and container options; every engine turns it
    into its own request. (Its docstring also spares ``dataclass`` rendering the 35-field signature.)"""

    image: str
    command: tuple[str, ...]
    name: str
    gpu: str
    env: tuple[EnvDecision, ...]
    trackers: TrackerPlan
    mounts: tuple[Mount, ...] = ()
    devices: tuple[str, ...] = ()
    gpu_request: str | None = None
    gpus: tuple[Gpu, ...] = ()  # the chosen GPUs (empty: none, or all of a host whose topology is not read here)
    gpu_select: str = "all"  # what was asked: all | N | LIST (under Slurm N is per node)
    host_root: str = "/"  # where /sys, /dev and /proc/driver/nvidia were read (PRIMUS_RUNNER_HOST_ROOT)
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
    workdir: str | None = None
    shm_size: str | None = None
    memory: str | None = None
    cpus: float | None = None
    secrets_via: str = "stdin"
    stop_timeout: float = 10.0
    pull: str = "missing"  # when the engine pulls the image: missing | always | never
    container_engine: str = "auto"  # container.engine: auto | docker | podman (every Slurm node uses it too)
    labels: tuple[tuple[str, str], ...] = ()  # the user's (--label), then the runner's own
    entrypoint: str | None = None  # --entrypoint: replaces the image's ("" clears it); None: the image's
    platform: str | None = None  # --platform: the image variant the engine must run (OS/ARCH[/VARIANT])
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

    def with_env(self, pairs: Mapping[str, str], reason: str = "computed") -> "LaunchPlan":
        """A copy with runner-computed, non-secret variables added or replaced (run ids, node rank)."""
        kept = tuple(d for d in self.env if d.name not in pairs)
        added = tuple(EnvDecision(k, True, False, reason, "runner", v) for k, v in pairs.items())
        return replace(self, env=kept + added)

    def record(self) -> dict:
        """Every field as JSON, from the dataclass itself: the one serialisation of a plan.

        The environment is NAMES only (with their secret flag and why they are
        forwarded): values are never part of a record. A Slurm node rebuilds the
        plan from it with ``from_record`` and its own environment.
        """
        doc = {f.name: _jsonable(getattr(self, f.name)) for f in fields(self) if f.name not in ("env", "trackers")}
        doc["env"] = [{"name": d.name, "secret": d.secret, "reason": d.reason} for d in self.forwarded]
        doc["trackers"] = {k: _jsonable(getattr(self.trackers, k)) for k in RECORDED_FIELDS}
        return doc

    @classmethod
    def from_record(cls, doc: Mapping, values: Mapping[str, str | Secret]) -> "LaunchPlan":
        """The plan a ``record`` describes, with each forwarded name's value from ``values``
        (names without a value are left out; the caller reports them)."""
        kinds = {f.name: f.type for f in fields(cls)}
        kwargs = {}
        for key, value in doc.items():
            if key in ("env", "trackers", "mounts", "gpus") or key not in kinds:
                continue
            kwargs[key] = tuple(tuple(v) if isinstance(v, list) else v for v in value) if isinstance(value, list) else value
        env = tuple(
            EnvDecision(e["name"], True, bool(e["secret"]), e.get("reason", "plan"), "env", values[e["name"]])
            for e in doc["env"] if values.get(e["name"]) is not None
        )
        trackers = TrackerPlan(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc["trackers"].items()})
        mounts = tuple(Mount(**m) for m in doc["mounts"])
        kwargs["gpus"] = tuple(Gpu(**g) for g in doc.get("gpus", ()))
        return cls(env=env, trackers=trackers, mounts=mounts, **kwargs)

    def to_dict(self) -> dict:
        """The redacted, JSON-ready form (``plan --json``): secret values are ``***``."""
        doc = self.record()
        doc.pop("stop_timeout", None)
        doc["env"] = {d.name: (MASK if d.secret else d.value) for d in self.forwarded}
        doc["secrets"] = [d.name for d in self.forwarded if d.secret]
        doc["skipped"] = [{"name": d.name, "reason": d.skip_reason} for d in self.skipped]
        doc["env_sources"] = {d.name: {"reason": d.reason, "source": d.source} for d in self.forwarded}
        doc["labels"] = dict(self.labels)
        doc["gpus"] = [g.to_dict() for g in self.gpus]
        doc["trackers"] = {
            "framework": self.trackers.framework,
            "enabled": list(self.trackers.enabled),
            "overrides": list(self.trackers.overrides),
            "override_sources": [{"override": token, "from": where} for token, where in self.trackers.override_sources],
            "run_name": self.trackers.run_name,  # the run the runner creates (trackers' run_name_key)
        }
        return doc



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
