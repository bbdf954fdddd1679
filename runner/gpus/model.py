"""The ``Gpu`` record and the host root discovery reads under."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from runner.errors import ConfigError, Problem

ROOT_ENV = "PRIMUS_RUNNER_HOST_ROOT"


class GpuError(ConfigError):
    """Bad GPU input or an unreadable topology: exit 2, nothing launched."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(Problem(message, hint=hint))


@dataclass(frozen=True)
class Gpu:
    """One GPU (or GPU partition) as the vendor's runtime numbers it on this host.

    ``render``/``card`` are canonical paths (``/dev/dri/renderD128``): where the node
    appears in a container; ``device_nodes`` under a host root gives where it is read.
    ``device_id`` is what a CUDA device request names (the index, as NVML counts)."""

    vendor: str  # "amd" | "nvidia"
    index: int
    uuid: str
    pci: str
    numa: int | None = None
    render: str | None = None  # ROCm: /dev/dri/renderD<minor>
    card: str | None = None  # ROCm: /dev/dri/card<m>, from the PCI device's drm/ directory
    minor: int | None = None  # ROCm: the render minor; CUDA: the /dev/nvidia<minor> minor
    node: int | None = None  # ROCm: the KFD topology node

    @property
    def flavor(self) -> str:
        return "rocm" if self.vendor == "amd" else "cuda"

    @property
    def device_id(self) -> str:
        return str(self.index)

    @property
    def nodes(self) -> tuple[str, ...]:
        """The GPU's own device nodes, canonical paths."""
        if self.vendor == "amd":
            return tuple(p for p in (self.render, self.card) if p)
        return (f"/dev/nvidia{self.minor}",) if self.minor is not None else ()

    def to_dict(self) -> dict:
        doc = asdict(self)
        if self.vendor == "amd":
            doc["devices"] = list(self.nodes)
        else:
            doc["device_id"] = self.device_id
        return doc

    def describe(self) -> str:
        where = self.render or (f"minor {self.minor}" if self.minor is not None else "?")
        numa = "?" if self.numa is None else str(self.numa)
        return f"{self.index}: {where}  {self.uuid}  pci {self.pci}  numa {numa}"


def host_root(environ=None) -> str:
    """Where ``/sys``, ``/dev`` and ``/proc/driver/nvidia`` are read: ``PRIMUS_RUNNER_HOST_ROOT`` or ``/``."""
    environ = os.environ if environ is None else environ
    return os.path.abspath(environ.get(ROOT_ENV) or "/")


def under(root: str, path: str) -> str:
    """``path`` (absolute, canonical) under ``root``."""
    return path if root == "/" else os.path.join(root, path.lstrip("/"))


def driver_entries(top: str, what: str = "") -> list[str] | None:
    """The entries of a driver's sysfs/procfs directory ``top``; None when there is no such
    directory (no driver, no GPUs of that vendor). Unreadable: a ``GpuError``."""
    try:
        return os.listdir(top)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GpuError(f"cannot read {what}{top}: {exc.strerror}") from None


def driver_file(path: str, what: str = "", hint: str | None = None) -> str:
    """The text of a driver's file, or a ``GpuError`` naming it."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise GpuError(f"cannot read {what}{path}: {exc.strerror}", hint=hint) from None
    except UnicodeDecodeError as exc:  # a damaged sysfs or a tree that is not the driver's
        raise GpuError(f"{what}{path} is not text (byte {exc.start} is not UTF-8)", hint=hint) from None


def numa_node(root: str, pci: str) -> int | None:
    try:
        value = int(open(under(root, f"/sys/bus/pci/devices/{pci}/numa_node")).read().strip())
    except (OSError, ValueError):
        return None
    return None if value < 0 else value
