"""AMD GPUs from the KFD topology, numbered as ROCr and rocm-smi number them.

``/sys/class/kfd/kfd/topology/nodes/<N>/properties`` holds ``<name> <value>`` lines.
Nodes are taken in numeric order (``nodes/10`` after ``nodes/9``); CPU nodes
(``simd_count 0``) are skipped; a GPU's render node is ``renderD<drm_render_minor>``
and its display node is the ``card*`` in its PCI device's ``drm/`` directory (a BMC's
VGA may hold ``card0``, so ``cardN`` is not ``renderD(128+N)``). A partitioned GPU's
partitions are nodes of their own, each with its render node.
"""

from __future__ import annotations

import os

from runner.gpus.model import Gpu, GpuError, driver_entries, driver_file, numa_node, under

TOPOLOGY = "/sys/class/kfd/kfd/topology/nodes"


def _properties(path: str, node: str = "") -> dict[str, int]:
    text = driver_file(path, f"the KFD topology file of node {node}, " if node else "the KFD topology file ",
                       hint="run where the amdgpu driver's sysfs is readable (reload the amdgpu driver if it is damaged), "
                            "set PRIMUS_RUNNER_HOST_ROOT to a good tree, or run with --gpu none")
    props = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, _, value = line.strip().partition(" ")
        try:
            props[name] = int(value.strip(), 0)
        except ValueError:
            raise GpuError(f"malformed KFD topology file {path}, line {number}: {line.strip()!r} is not '<name> <number>'",
                           hint="check the driver's sysfs (or the tree under PRIMUS_RUNNER_HOST_ROOT)") from None
    for key in ("simd_count", "drm_render_minor"):
        if key not in props:
            raise GpuError(f"malformed KFD topology file {path}: no {key} line")
    return props


def pci_address(props: dict[str, int]) -> str:
    """``DDDD:BB:DD.F`` from ``domain`` and ``location_id`` (as the AMD container toolkit computes it)."""
    loc = props.get("location_id", 0)
    return f"{props.get('domain', 0):04x}:{(loc >> 8) & 0xFF:02x}:{(loc >> 3) & 0x1F:02x}.{loc & 7:x}"


def _card(root: str, pci: str) -> str | None:
    try:
        names = os.listdir(under(root, f"/sys/bus/pci/devices/{pci}/drm"))
    except OSError:
        return None
    cards = sorted((n for n in names if n.startswith("card") and n[4:].isdigit()), key=lambda n: int(n[4:]))
    return f"/dev/dri/{cards[0]}" if cards else None


def discover(root: str) -> list[Gpu]:
    top = under(root, TOPOLOGY)
    entries = driver_entries(top, "the KFD topology ")
    if entries is None:
        return []
    odd = [e for e in entries if not e.isdigit()]
    if odd:
        raise GpuError(f"malformed KFD topology {top}: unexpected entries {', '.join(sorted(odd))} (nodes are numbered)")
    gpus: list[Gpu] = []
    for node in sorted(entries, key=int):
        props = _properties(os.path.join(top, node, "properties"), node)
        if props["simd_count"] == 0 or props["drm_render_minor"] == 0:
            continue  # a CPU node
        minor = props["drm_render_minor"]
        if not 128 <= minor <= 255:
            raise GpuError(f"malformed KFD topology {top}/{node}/properties: drm_render_minor {minor} is not 128…255")
        pci = pci_address(props)
        gpus.append(Gpu(
            vendor="amd", index=len(gpus), uuid=f"0x{props.get('unique_id', 0):X}", pci=pci,
            numa=numa_node(root, pci), render=f"/dev/dri/renderD{minor}", card=_card(root, pci), minor=minor, node=int(node),
        ))
    return gpus


def kfd_device(root: str) -> str:
    return under(root, "/dev/kfd")
