"""Discovery by flavor: ROCm from the KFD topology, CUDA from /proc/driver/nvidia."""

from __future__ import annotations

from runner.gpus import cuda, rocm
from runner.gpus.model import Gpu


def discover(flavor: str, root: str) -> list[Gpu]:
    """The flavor's GPUs under ``root`` in the vendor's enumeration order ([] when it has none)."""
    if flavor == "rocm":
        return rocm.discover(root)
    if flavor == "cuda":
        return cuda.discover(root)
    return []
