"""A GPU selection as a plan's devices, labels, environment and problems.

ROCm: ``/dev/kfd`` plus exactly the chosen GPUs' render and card nodes (never all of
``/dev/dri`` for a subset), taken from the host root and mapped to their canonical
paths in the container. CUDA: no device nodes here; the engine's request names the
chosen device IDs. Inside the container the chosen GPUs are numbered from 0, so a
visible-devices variable forwarded from the host (a host index) is a conflict.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable, Mapping, Sequence

from runner.errors import Problem
from runner.gpus import holders
from runner.gpus.discovery import discover
from runner.gpus.model import Gpu, GpuError, under
from runner.gpus.selection import parse

# Numbered inside the job (from 0): a host value points at the wrong GPU or at none.
NUMBERED = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")
# Choose host GPUs for a container toolkit: the runner's selection does that.
TOOLKIT = ("AMD_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")


class Resolved:
    def __init__(self):
        self.gpus: tuple[Gpu, ...] = ()
        self.problems: list[Problem] = []
        self.found = 0  # how many GPUs of the flavor the host has (0: none found, or not looked for)


def resolve(flavor: str, text, explicit: bool, root: str, held: Callable[[], Mapping[str, str]] | None,
            per_node: bool = False, where: str | None = None) -> Resolved:
    """The GPUs a launch gets on this host. ``per_node``: Slurm decides on each node (nothing here)."""
    result = Resolved()
    try:
        selection = parse(text)
        if flavor == "none":
            if explicit and selection.explicit:
                raise GpuError(f"--gpus {selection.text} asks for GPUs, but --gpu none runs without any",
                               hint="drop --gpus (or container.gpus), or choose --gpu rocm|cuda")
            return result
        if selection.kind == "count" and selection.count == 0:
            raise GpuError("--gpus 0 selects no GPU", hint="use --gpu none to run without GPUs")
        if per_node:
            if selection.kind == "list":
                raise GpuError(f"--gpus {selection.text}: under Slurm, Slurm chooses each node's GPUs",
                               hint="ask for a count per node: --gpus N (or --gpus-per-node N, --gres gpu:N)")
            return result
        found = discover(flavor, root)
        result.found = len(found)
        if not found:
            if selection.explicit:
                raise GpuError(f"--gpus {selection.text}: no {flavor} GPU found under {root} "
                               f"({'no KFD topology' if flavor == 'rocm' else 'no /proc/driver/nvidia/gpus'})",
                               hint="install the driver, set PRIMUS_RUNNER_HOST_ROOT to where its sysfs is, or use --gpu none")
            return result  # all GPUs of a host whose topology is not readable here: the flavor's default devices
        result.gpus = tuple(holders.choose(selection, found, flavor, held() if (held and selection.explicit) else {}))
    except GpuError as exc:
        result.problems += [p._replace(where=p.where or where) for p in exc.problems]
    return result


def device_specs(flavor: str, gpus: Sequence[Gpu], root: str) -> list[str]:
    """The ``--device`` entries of a selection: ``HOST[:CONTAINER]`` (the host side under ``root``)."""
    if flavor != "rocm" or not gpus:
        return []
    paths = ["/dev/kfd"] + [p for g in gpus for p in g.nodes]
    return [p if root == "/" else f"{under(root, p)}:{p}" for p in paths]


def is_gpu_device(spec: str) -> bool:
    parts = spec.split(":")
    inner = parts[1] if len(parts) > 1 and parts[1] else parts[0]
    inner = os.path.normpath(inner)
    return inner in ("/dev/kfd", "/dev/dri") or inner.startswith(("/dev/dri/", "/dev/nvidia"))


def with_gpus(plan, gpus: Sequence[Gpu], root: str):
    """``plan`` with these GPUs: their device nodes instead of any other GPU device, the label that
    tells other launches they are held, and for a subset ``GPUS_PER_NODE`` = how many the job sees."""
    job, container = plan.job, plan.container
    devices = [d for d in container.devices if not is_gpu_device(d)] + device_specs(job.gpu, gpus, root)
    labels = tuple((k, v) for k, v in container.labels if k != holders.LABEL_GPUS) + ((holders.LABEL_GPUS, holders.label_value(gpus)),)
    job = replace(job, gpus=tuple(gpus), host_root=root)
    plan = replace(plan, job=job, container=replace(container, devices=tuple(devices), labels=labels))
    if job.gpu_select == "all":
        return plan
    # A subset: the job's launcher (Primus's base_env.sh) numbers GPUs 0..GPUS_PER_NODE-1.
    notices = tuple(_without_name(n, "GPUS_PER_NODE") for n in job.notices)
    job = replace(job, notices=tuple(n for n in notices if n)).with_env({"GPUS_PER_NODE": str(len(gpus))}, "gpus")
    return replace(plan, job=job)


def _without_name(notice: str, name: str) -> str | None:
    """The "not set on this host" notice without ``name`` (the runner sets it now)."""
    head = "not set on this host, not forwarded: "
    if not notice.startswith(head):
        return notice
    names = [n for n in notice[len(head):].split(", ") if n != name]
    return head + ", ".join(names) if names else None


def env_problems(decisions, count: int | None) -> list[Problem]:
    """Visible-devices variables forwarded from the host: host indices, wrong inside the container.
    ``count``: how many GPUs the job sees (its own numbering ``0..count-1`` is harmless)."""
    own = ",".join(str(i) for i in range(count)) if count else None
    problems = []
    for d in decisions:
        if not d.forwarded or d.reason in ("computed", "gpus", "slurm", "tracker run"):
            continue
        if d.name in TOOLKIT or (d.name in NUMBERED and (own is None or str(d.value) != own)):
            problems.append(Problem(
                f"{d.name} is forwarded from the host ({d.reason}), but inside the container the GPUs the runner "
                "passes are numbered from 0: a host index there points at another GPU or at none",
                hint=f"choose GPUs with --gpus (e.g. --gpus 0-3) and stop forwarding {d.name}",
            ))
    return problems


def privileged_problem(privileged: bool, gpus: Sequence[Gpu], found: int, where: str | None) -> Problem | None:
    """``privileged`` with a subset of the host's GPUs: the subset would isolate nothing."""
    if not privileged or not gpus or len(gpus) >= found:
        return None
    return Problem(
        f"privileged: true lifts every device limit, so the container would see all {found} GPUs, not the "
        f"{len(gpus)} chosen",
        where=where,
        hint="set container.options.privileged: false (the capabilities the launcher adds, cap-add, stay)",
    )
