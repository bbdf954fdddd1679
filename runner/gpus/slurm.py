"""A Slurm step's GPU allocation as this node's devices.

Containers live in the engine daemon's cgroup, not the job's, so Slurm's device
constraint never reaches them: the node agent turns the allocation into explicit
devices itself. Slurm names the allocation by node-local gres indices
(``SLURM_STEP_GPUS``, else ``SLURM_JOB_GPUS``, else the ``ROCR_VISIBLE_DEVICES`` /
``CUDA_VISIBLE_DEVICES`` it set). Index i is the i-th ``File`` of this node's
``Name=gpu`` lines in ``gres.conf``; without such lines (``AutoDetect``) it is the
i-th GPU in the vendor's enumeration order, which is the order autodetection uses.
"""

from __future__ import annotations

import os
import re
from typing import Mapping, Sequence

from runner.gpus.model import Gpu, GpuError


def allocated(environ: Mapping[str, str], flavor: str) -> list[int] | None:
    """The step's gres indices, or None when Slurm allocated none (or this is not a Slurm step)."""
    if not environ.get("SLURM_JOB_ID"):
        return None
    names = ["SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "ROCR_VISIBLE_DEVICES" if flavor == "rocm" else "CUDA_VISIBLE_DEVICES"]
    for name in names:
        value = (environ.get(name) or "").strip()
        if not value:
            continue
        try:
            return [int(v) for v in value.split(",")]
        except ValueError:
            raise GpuError(f"{name}={value}: not the gres indices Slurm sets (e.g. 0,1)",
                           hint="the node's gres.conf must list the GPUs' device files") from None
    return None


def _expand(text: str) -> list[str]:
    """Slurm's bracket ranges: ``renderD[128-131,140]`` → the names, in order."""
    match = re.search(r"\[([^\]]+)\]", text)
    if not match:
        return [text]
    out = []
    for part in match.group(1).split(","):
        low, _, high = part.partition("-")
        width = len(low)
        for n in range(int(low), int(high or low) + 1):
            out += _expand(text[:match.start()] + str(n).zfill(width) + text[match.end():])
    return out


def gres_files(node: str, conf: str | None = None) -> list[str]:
    """This node's GPU device files from ``gres.conf``, in order ([] when it lists none)."""
    if conf is None:
        base = os.path.dirname(os.environ.get("SLURM_CONF") or "/etc/slurm/slurm.conf")
        conf = os.path.join(base, "gres.conf")
    try:
        lines = open(conf, encoding="utf-8").read().splitlines()
    except OSError:
        return []
    files: list[str] = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if fields.get("Name", "").lower() != "gpu" or "File" not in fields:
            continue
        if "NodeName" in fields and node not in {n for part in fields["NodeName"].split(",") for n in _expand(part)}:
            continue
        for part in re.split(r",(?![^\[]*\])", fields["File"]):
            files += _expand(part)
    return files


def node_gpus(indices: Sequence[int], found: Sequence[Gpu], files: Sequence[str], node: str) -> list[Gpu]:
    """The GPUs of ``found`` that the gres indices name on this node."""
    chosen = []
    for i in indices:
        if files:
            if i >= len(files):
                raise GpuError(f"node {node}: Slurm allocated gres GPU {i}, but gres.conf lists {len(files)} for it")
            base = os.path.basename(files[i])
            match = re.fullmatch(r"(?:renderD|nvidia)(\d+)", base)
            gpu = next((g for g in found if match and g.minor == int(match.group(1))), None)
            if gpu is None:
                raise GpuError(f"node {node}: gres GPU {i} is {files[i]}, which is no GPU this node's topology lists "
                               f"({', '.join(str(g.minor) for g in found) or 'none found'})",
                               hint="gres.conf File= must name the GPUs' render nodes (ROCm) or /dev/nvidia<minor> (CUDA)")
        else:
            if i >= len(found):
                raise GpuError(f"node {node}: Slurm allocated GPU {i}, but this node has {len(found)}")
            gpu = found[i]
        chosen.append(gpu)
    return chosen
