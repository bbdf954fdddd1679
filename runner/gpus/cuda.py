"""NVIDIA GPUs from ``/proc/driver/nvidia/gpus/<BDF>/information``.

The index is the GPU's place in PCI bus order (NVML's and ``NVIDIA_VISIBLE_DEVICES``'
order); the device minor (``/dev/nvidia<minor>``) is read, never assumed to be the index.
"""

from __future__ import annotations

import os

from runner.gpus.model import Gpu, GpuError, driver_entries, driver_file, numa_node, under

GPUS = "/proc/driver/nvidia/gpus"
# What every CUDA container needs besides its GPUs' own nodes (the toolkit adds them itself).
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")


def _information(path: str) -> dict[str, str]:
    fields = {}
    for line in driver_file(path).splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip()] = value.strip()
    return fields


def discover(root: str) -> list[Gpu]:
    top = under(root, GPUS)
    found = []
    for entry in driver_entries(top) or ():
        path = os.path.join(top, entry, "information")
        info = _information(path)
        try:
            minor = int(info["Device Minor"])
            uuid = info["GPU UUID"]
        except (KeyError, ValueError):
            raise GpuError(f"malformed {path}: no 'GPU UUID' or numeric 'Device Minor' line") from None
        pci = info.get("Bus Location", entry).lower()
        found.append((pci, uuid, minor))
    found.sort()
    return [Gpu(vendor="nvidia", index=i, uuid=uuid, pci=pci, numa=numa_node(root, pci), minor=minor)
            for i, (pci, uuid, minor) in enumerate(found)]
