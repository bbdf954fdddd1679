"""Caches that outlive the container: one directory per host and image, mounted into every job.

Triton, TorchInductor, MIOpen, AOTriton, comgr, hipBLASLt tuning and the Hugging Face
hub write where these variables point (the names of Primus's own cache layout,
``PRIMUS_CACHE_ROOT``); inside the container that is ``/primus-runner/cache``, on the
host ``cache.dir/<image key>`` (default ``~/.cache/primus-runner/job-cache``), so a
second launch of the same image finds what the first compiled. A different image
gets its own directory: kernels compiled by one ROCm stack do not fit another.
On Slurm each node mounts its own local ``cache.node_dir`` (default
``/tmp/primus-runner-<uid>/cache``): compilers' caches on a shared file system are
slow and are written by many nodes at once. ``cache.enabled: false`` turns it off.
A cache variable is set only where nothing else sets it: not when the job already gets it
(the user's environment, ``--env``, a config literal) nor when the image's own ``ENV`` sets it
(``image_set``, once the image is inspected); ``HF_HUB_CACHE`` not when ``HF_HOME``,
``HF_HUB_CACHE`` or ``DATA_PATH`` is set either (Primus's env scripts place the hub cache
under ``$DATA_PATH``: models already downloaded there are reused).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from runner.launch_plan import LaunchPlan, Mount
from runner.runs.paths import CONTAINER_ROOT, cache_home

TARGET = f"{CONTAINER_ROOT}/cache"
# variable -> its place under the cache root (HIPBLASLT_TUNING_FILE is a file, the others directories)
VARIABLES = {
    "TRITON_CACHE_DIR": "triton",
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "MIOPEN_USER_DB_PATH": "miopen",
    "AOTRITON_CACHE_DIR": "aotriton",
    "AMD_COMGR_CACHE_DIR": "comgr",
    "HIPBLASLT_TUNING_FILE": "hipblaslt/tuning.csv",
    "HF_HUB_CACHE": "huggingface/hub",
}
DEFAULT_NODE_DIR = "/tmp/primus-runner-{uid}/cache"
# What places the Hugging Face hub cache already, when set: the runner's HF_HUB_CACHE stays out.
HF_PLACED_BY = ("HF_HOME", "HF_HUB_CACHE", "DATA_PATH")
REASON = "cache"


class CacheSettings(NamedTuple):
    enabled: bool
    dir: str
    node_dir: str


def settings(config) -> CacheSettings:
    get = (lambda key, default: config.get("cache", key, default=default)) if config is not None else (lambda key, default: default)
    return CacheSettings(
        enabled=bool(get("enabled", True)),
        dir=str(get("dir", None) or cache_home() / "job-cache"),
        node_dir=str(get("node_dir", None) or DEFAULT_NODE_DIR),
    )


def image_key(image: str) -> str:
    """A directory name for one image: readable, and distinct for distinct references."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", image).strip("._")[:80]
    return f"{safe}-{hashlib.sha256(image.encode()).hexdigest()[:8]}"


def host_dir(base: str, image: str) -> Path:
    """``base`` with ``{uid}`` replaced (the one placeholder; the text is no template: ``str.format``
    would evaluate ``{uid.__class__…}`` written in a config)."""
    return Path(os.path.expanduser(base.replace("{uid}", str(os.getuid())))) / image_key(image)


def unset_by(names: set[str]) -> list[str]:
    """The cache variables the runner may set where ``names`` are set already: those not among them,
    and ``HF_HUB_CACHE`` only where nothing places the hub cache."""
    return [name for name in (*VARIABLES, "PRIMUS_CACHE_ROOT")
            if name not in names and not (name == "HF_HUB_CACHE" and names.intersection(HF_PLACED_BY))]


def apply(plan: LaunchPlan, directory: Path) -> LaunchPlan:
    """The plan with ``directory`` mounted at the cache root and the variables nothing else sets pointing into it (pure)."""
    place = {**{name: f"{TARGET}/{sub}" for name, sub in VARIABLES.items()}, "PRIMUS_CACHE_ROOT": TARGET}
    env = {name: place[name] for name in unset_by({d.name for d in plan.job.forwarded})}
    mounted = plan.container.mounts + (Mount(str(directory), TARGET, "rw"),)
    return replace(plan.with_env(env, REASON), container=replace(plan.container, mounts=mounted))


def image_set(plan: LaunchPlan, image_env: list[str]) -> tuple[LaunchPlan, list[str]]:
    """The plan without the cache variables the image's own ``ENV`` (``NAME=value`` entries) sets,
    and their names (pure)."""
    names = {entry.partition("=")[0] for entry in image_env}
    allowed = set(unset_by(names))
    dropped = [d.name for d in plan.job.env if d.reason == REASON and d.name not in allowed]
    if not dropped:
        return plan, []
    job = replace(plan.job, env=tuple(d for d in plan.job.env if not (d.reason == REASON and d.name in dropped)))
    return replace(plan, job=job), dropped


def make_dir(directory: Path) -> None:
    """The cache directory and each tool's place in it (some tools do not create their own)."""
    for sub in VARIABLES.values():
        (directory / (sub.rsplit("/", 1)[0] if sub.endswith(".csv") else sub)).mkdir(parents=True, exist_ok=True, mode=0o700)
