"""The syntax of ``container.options`` values that an engine turns into typed fields:
sizes (``16g``), ulimits (``nofile=1024:2048``), device mappings (``/dev/kfd:/dev/kfd:rwm``).

Each parser returns the typed value or raises ``ValueError`` with a message that
says what the form is. The plan calls them with the value's ``file:line`` (so
``plan``, ``check`` and ``--dry-run`` report a bad value before anything exists);
the Docker request builder calls them again to build the create body, so a bad
value can never reach an engine call, whichever path built the plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)b?\s*$", re.IGNORECASE)
_ULIMIT_NAME = re.compile(r"^[a-z]+$")
_DEVICE_PERMS = re.compile(r"^[rwm]{1,3}$")


def parse_bytes(text) -> int:
    """Docker's size strings (``16m``, ``64g``, ``1024``) as bytes."""
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"size '{text}' is not a number with an optional unit (b, k, m, g, t), e.g. 16g")
    number, unit = match.groups()
    return int(float(number) * 1024 ** "bkmgt".index((unit or "b").lower()))


@dataclass(frozen=True)
class Ulimit:
    name: str
    soft: int
    hard: int

    def body(self) -> dict:
        return {"Name": self.name, "Soft": self.soft, "Hard": self.hard}

    def __str__(self) -> str:
        return f"{self.name}={self.soft}:{self.hard}"


def parse_ulimit(spec) -> Ulimit:
    """``NAME=SOFT[:HARD]`` (``-1`` is unlimited, as docker takes it)."""
    name, eq, limits = str(spec).partition("=")
    soft, _, hard = limits.partition(":")
    try:
        if not eq or not _ULIMIT_NAME.match(name):
            raise ValueError
        ulimit = Ulimit(name, int(soft), int(hard or soft))
    except ValueError:
        raise ValueError(f"ulimit '{spec}' is not NAME=SOFT[:HARD] with whole numbers, e.g. nofile=65536:65536") from None
    if ulimit.soft > ulimit.hard and ulimit.hard != -1:
        raise ValueError(f"ulimit '{spec}': the soft limit is above the hard limit")
    return ulimit


@dataclass(frozen=True)
class DeviceMapping:
    host: str
    inner: str
    perms: str = "rwm"

    def body(self) -> dict:
        return {"PathOnHost": self.host, "PathInContainer": self.inner, "CgroupPermissions": self.perms}

    def __str__(self) -> str:
        return f"{self.host}:{self.inner}:{self.perms}"


def parse_device(spec) -> DeviceMapping:
    """``HOST[:CONTAINER[:PERMS]]``: a container path is absolute, permissions are out of ``rwm``
    (a host side that is not a path is a CDI device name, e.g. ``nvidia.com/gpu=all``)."""
    parts = str(spec).split(":")
    host = parts[0]
    inner = parts[1] if len(parts) > 1 and parts[1] else host
    perms = parts[2] if len(parts) > 2 else "rwm"
    if len(parts) > 3 or not host or (host.startswith("/") and not inner.startswith("/")) or not _DEVICE_PERMS.match(perms):
        raise ValueError(f"device '{spec}' is not HOST[:CONTAINER[:PERMS]] with an absolute container path and PERMS of r, w, m")
    return DeviceMapping(host, inner, perms)
