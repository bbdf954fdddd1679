"""A ``LaunchPlan`` as a Docker Engine API container: the create body, its labels, and the
last check that nothing in it holds a secret value (what ``docker inspect`` would show).

Pure: nothing here talks to the daemon.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field, replace

from runner.config import container_values
from runner.errors import ConfigError, Problem
from runner.launch_plan import LABEL, LABEL_JOB, LaunchPlan
from runner.secrets import Masker

LABEL_RUN = "io.primus-runner.run"  # the run's id (runner.runs): finds the run's container without its container id


def _typed(parse, value):
    """A value through its typed parser: the request refuses what the engine would (exit 2)."""
    try:
        return parse(value)
    except ValueError as exc:
        raise ConfigError(Problem(str(exc), hint="fix it in container.options (primus-runner plan shows where)")) from None


def parse_bytes(text: str) -> int:
    """Docker's size strings (``16m``, ``64g``, ``1024``) as bytes; ``ConfigError`` otherwise."""
    return _typed(container_values.parse_bytes, text)


def container_config(plan: LaunchPlan, labels: dict[str, str], entrypoint: list[str] | None, secret_env: list[str], stdin: bool,
                     tty: bool = False) -> dict:
    """The Engine API create body. ``secret_env`` is non-empty only in the env fallback;
    ``stdin``: attached (the shim's secrets, ``-i``); ``tty``: the job gets a terminal (``-t``).

    The engine never keeps a log (log driver ``none``), attached, kept or detached: its copy
    would be the job's raw, unmasked output on the host's disk. The runner reads the job's
    output from the attach stream and keeps the masked copy (the run's log).
    """
    job, container = plan.job, plan.container
    host: dict = {
        "Init": True,  # tini as PID 1: SIGTERM reaches the job, zombies are reaped
        "Privileged": container.privileged,
        "CapAdd": list(container.cap_add) or None,
        "GroupAdd": list(container.group_add) or None,
        "SecurityOpt": list(container.security_opt) or None,
        "Ulimits": [_typed(container_values.parse_ulimit, u).body() for u in container.ulimits] or None,
        "Devices": [_typed(container_values.parse_device, d).body() for d in container.devices] or None,
        "Binds": [f"{m.source}:{m.target}:{m.mode}" for m in container.mounts] or None,
        "IpcMode": container.ipc or None,
        "NetworkMode": container.network or None,
        "LogConfig": {"Type": "none", "Config": {}},
    }
    if container.gpu_request == "nvidia":  # exactly the chosen GPUs by ID, else all (--gpus all)
        ids = [g.device_id for g in job.gpus]
        host["DeviceRequests"] = [{"Driver": "", "DeviceIDs": ids, "Capabilities": [["gpu"]]} if ids
                                  else {"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]
    if container.shm_size:
        host["ShmSize"] = parse_bytes(container.shm_size)
    if container.memory:
        host["Memory"] = parse_bytes(container.memory)
    if container.cpus:
        host["NanoCpus"] = int(container.cpus * 1e9)
    config: dict = {
        "Image": container.image,
        "Cmd": list(job.command),
        "Env": [f"{k}={v}" for k, v in job.public_env().items()] + secret_env,
        "Labels": labels,
        "AttachStdin": stdin,
        "OpenStdin": stdin,
        "StdinOnce": stdin,
        "AttachStdout": True,
        "AttachStderr": True,
        "Tty": tty,
        "StopTimeout": int(job.stop_timeout),
        "HostConfig": {k: v for k, v in host.items() if v is not None},
    }
    if entrypoint is not None:
        config["Entrypoint"] = entrypoint
    if container.user:
        config["User"] = container.user
    if job.workdir:
        config["WorkingDir"] = job.workdir
    if container.hostname:
        config["Hostname"] = container.hostname
    if container.run_options:  # docker run options passed through as given, onto the same body check_clean reads
        from runner.engines.docker import run_options

        run_options.apply(config, container.run_options)
    return config


def labels_for(plan: LaunchPlan, extra: dict[str, str], run_id: str | None) -> dict[str, str]:
    labels = dict(plan.container.labels)
    labels.setdefault(LABEL, "true")
    labels.setdefault(LABEL_JOB, plan.job.name)
    labels.update(extra)
    if run_id is not None:
        labels[LABEL_RUN] = run_id
    return labels


@dataclass(frozen=True)
class DockerRequest:
    """One container, complete: the create body (public values only), how secrets reach it,
    and every decision that went into it. ``launch`` sends exactly ``config``; ``--dry-run``
    renders exactly this object (``argv``, ``to_dict``).

    Built in two named steps: ``make_request`` from the plan alone, then ``resolve`` with
    what only the engine and the image know (the engine kind, the image's entrypoint the
    shim execs). ``pending`` lists what is not yet known (a dry run with no engine or no
    local image); a launch never starts with anything pending."""

    plan: LaunchPlan
    config: dict  # the Engine API create body; secrets are never in it unless secrets_via is env
    use_shim: bool  # secrets through the stdin shim (the default)
    secret_names: tuple[str, ...] = ()
    labels: dict = field(default_factory=dict)
    kind: str = "docker"  # docker | podman: which engine the body is for (the CLI the dry run names)
    remove: bool = True  # removed after it ends (docker run --rm), unless kept or detached
    detach: bool = False
    interactive: bool = False  # -i: the user's stdin is the job's (after the shim's secrets)
    decisions: tuple[str, ...] = ()  # what was decided and from what (shown by the dry run)
    pending: tuple[str, ...] = ()  # what only the engine or the image can tell (filled by resolve)
    run_id: str | None = None  # the run's id: its label, and the one id a dry run and its launch differ in
    fetch: str = "pull"  # an image that is not local: pull (under plan.container.pull) or build (up --build), in resolve
    engine: str = "auto"  # container.engine: the engine resolve and launch speak to

    def with_run_env(self, pairs: dict[str, str]) -> "DockerRequest":
        """The request with the tracker handshake's values (run ids) set by name: the same body
        otherwise, not a rebuilt one."""
        if not pairs:
            return self
        config = copy.deepcopy(self.config)
        config["Env"] = [e for e in config.get("Env", []) if e.split("=", 1)[0] not in pairs] + [f"{k}={v}" for k, v in pairs.items()]
        return replace(self, plan=self.plan.with_env(pairs, "tracker run"), config=config)

    def argv(self) -> list[str]:
        """The equivalent ``docker run …`` / ``podman run …`` argument list (secrets by name only)."""
        from runner.engines.docker.render import run_argv

        return run_argv(self)

    def to_dict(self) -> dict:
        from runner.engines.docker.render import shim_note

        return {"engine": self.kind, "name": self.plan.job.name, "argv": self.argv(), "create": self.config,
                "ids": {"run": self.run_id},  # what a launch of the same plan has anew: the run id (and its label)
                "fetch": self.fetch, "detach": self.detach, "remove": self.remove,
                "platform": self.plan.container.platform,
                "libpod_create": self.libpod_create() if self.kind == "podman" else None,
                "secrets": list(self.secret_names), "secrets_via": "stdin shim" if self.use_shim else "env",
                "shim": shim_note(self) if self.use_shim else None,
                "decisions": list(self.decisions), "pending": list(self.pending)}

    def libpod_create(self) -> dict | None:
        """What Podman's own create endpoint gets for ``config`` (``Engine.create`` sends exactly this),
        or None when Podman's compat create gets ``config`` as is (a passed-through option it alone carries)."""
        from runner.clients.engine_api.libpod import podman_create

        try:
            return podman_create(self.plan.job.name, self.config)
        except ValueError:  # CDI devices with an option Podman's own create cannot take: the launch refuses it
            return None

    def render(self) -> str:
        from runner.engines.docker.render import run_text

        return run_text(self)


def check_clean(config: dict, masker: Masker) -> None:
    """Refuse a container config that would show a secret value in ``docker inspect``
    (``Cmd``, ``Entrypoint``, ``Env``, ``Labels``, ``WorkingDir``, mounts …): the same
    defence in depth as the Slurm engine's check of the files it writes."""
    if not masker:
        return
    places = []
    for key in ("Cmd", "Entrypoint", "Env", "Labels", "WorkingDir", "User", "Image"):
        if key in config and masker.contains_secret(json.dumps(config[key]).encode()):
            places.append(key)
    if masker.contains_secret(json.dumps(config.get("HostConfig", {})).encode()):
        places.append("HostConfig (mounts, devices, options)")
    if not places:
        return
    names = sorted({name for name, _, _ in masker.matches(json.dumps(config).encode())})
    fix = ("quote the variable so the job's shell expands it inside the container, e.g. "
           "-- sh -c 'python train.py --hf-token \"$HF_TOKEN\"' (and allowlist HF_TOKEN)")
    raise ConfigError(Problem(
        f"the container config would show the value of {', '.join(names)} in `docker inspect` ({', '.join(places)})",
        hint=fix if "Cmd" in places else "pass secrets by name (container.options.env: [NAME]) so they travel through the stdin shim",
    ))
