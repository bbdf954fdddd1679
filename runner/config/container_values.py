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

from typing import NamedTuple

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


class Ulimit(NamedTuple):
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


class DeviceMapping(NamedTuple):
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


RUNNER_LABEL_PREFIX = "io.primus-runner."  # the runner's own labels: ps, logs, down and GPU leases find jobs by them
_LABEL_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
_PLATFORM = re.compile(r"^[a-z0-9_]+(/[a-z0-9_]+){0,2}$")


def parse_label(spec) -> tuple[str, str]:
    """``--label KEY=VALUE`` (``KEY`` alone: an empty value, as docker takes it) as (key, value)."""
    key, _, value = str(spec).partition("=")
    if not _LABEL_KEY.match(key):
        raise ValueError(f"label '{spec}' is not KEY=VALUE with a key of letters, digits, '.', '-', '_' or '/'")
    if key.startswith(RUNNER_LABEL_PREFIX):
        raise ValueError(f"label '{key}': {RUNNER_LABEL_PREFIX}* are the runner's own labels (how ps, logs and down "
                         "find its jobs) and cannot be set or overridden")
    return key, value


def parse_platform(spec) -> str:
    """``--platform OS[/ARCH[/VARIANT]]`` (``linux/arm64``, ``linux/arm/v7``), lower case, as the engine takes it."""
    text = str(spec).strip()
    if not _PLATFORM.match(text):
        raise ValueError(f"platform '{spec}' is not OS[/ARCH[/VARIANT]] in lower case, e.g. linux/amd64 or linux/arm64")
    return text


def parse_entrypoint(spec) -> str:
    """``--entrypoint PROGRAM`` as docker takes it: one program (its arguments are the command); empty resets it."""
    text = str(spec)
    if "\0" in text or "\n" in text:
        raise ValueError("the entrypoint is one program path or name (no NUL or newline); its arguments go after --")
    return text
