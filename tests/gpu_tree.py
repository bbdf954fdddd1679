"""Fake GPU host trees for tests (``PRIMUS_RUNNER_HOST_ROOT``).

``write_tree`` lays out the files the runner reads (KFD topology, PCI drm/ directories,
NUMA nodes, /proc/driver/nvidia) in any directory; device nodes need root and are made
only with ``mknod=True``. The integration tests use the tree .ci/setup-fake-gpus.sh
builds (``FAKE_ROOT``), whose device nodes real Docker and Podman accept.
"""

from __future__ import annotations

import os
from pathlib import Path

FAKE_ROOT = Path(os.environ.get("FAKE_GPU_ROOT", "/var/lib/primus-fake-gpus"))
SETUP_FAKE_GPUS = "run: bash .ci/setup-fake-gpus.sh (as root; .ci/setup-engines.sh runs it)"


def amd_uuid(i: int) -> str:
    return f"0x{0x5A1C0FFEE0000000 + i:X}"


def nvidia_uuid(i: int) -> str:
    return f"GPU-7e57c0de-0000-4000-8000-00000000000{i}"


def write_tree(root: Path, amd: int = 8, nvidia: int = 0, cpu_nodes: int = 3, card_offset: int = 1,
               partitions: int = 1, mknod: bool = False) -> Path:
    """``amd`` GPUs (each ``partitions`` KFD nodes with their own render nodes) after ``cpu_nodes``
    CPU nodes; display node ``card<i+card_offset>``; ``nvidia`` NVIDIA GPUs with minors reversed."""
    topo = root / "sys/class/kfd/kfd/topology/nodes"
    topo.mkdir(parents=True, exist_ok=True)
    (root / "sys/class/kfd/kfd/dev").write_text("236:0\n")
    (root / "dev/dri").mkdir(parents=True, exist_ok=True)
    for n in range(cpu_nodes):
        (topo / str(n)).mkdir(exist_ok=True)
        (topo / str(n) / "properties").write_text("cpu_cores_count 32\nsimd_count 0\ndrm_render_minor 0\nlocation_id 0\ndomain 0\nunique_id 0\n")
    node = cpu_nodes
    k = 0
    for i in range(amd):
        for p in range(partitions):
            bus = 0x11 + 0x10 * i
            location = (bus << 8) | p  # a partition differs in the function bits, as MI300 CPX does
            minor = 128 + k
            bdf = f"0000:{bus:02x}:00.{p:x}"
            (topo / str(node)).mkdir(exist_ok=True)
            (topo / str(node) / "properties").write_text(
                f"cpu_cores_count 0\nsimd_count 1216\nvendor_id 4098\ndevice_id 29857\nlocation_id {location}\ndomain 0\n"
                f"drm_render_minor {minor}\nunique_id {0x5A1C0FFEE0000000 + k}\nnum_xcc 8\n")
            pci = root / "sys/bus/pci/devices" / bdf
            (pci / "drm" / f"renderD{minor}").mkdir(parents=True, exist_ok=True)
            (pci / "drm" / f"card{k + card_offset}").mkdir(parents=True, exist_ok=True)
            (pci / "numa_node").write_text(f"{i * 2 // max(amd, 1)}\n")
            if mknod:
                os.mknod(root / f"dev/dri/renderD{minor}", 0o660 | 0o020000, os.makedev(226, minor))
                os.mknod(root / f"dev/dri/card{k + card_offset}", 0o660 | 0o020000, os.makedev(226, k + card_offset))
            node += 1
            k += 1
    if mknod:
        os.mknod(root / "dev/kfd", 0o660 | 0o020000, os.makedev(236, 0))
    gpus = root / "proc/driver/nvidia/gpus"
    for i in range(nvidia):
        bdf = f"0000:{0x17 + 0x10 * i:02x}:00.0"
        (gpus / bdf).mkdir(parents=True, exist_ok=True)
        (gpus / bdf / "information").write_text(
            f"Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t {nvidia_uuid(i)}\nBus Location: \t {bdf}\nDevice Minor: \t {nvidia - 1 - i}\n")
    return root
