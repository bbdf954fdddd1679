"""Slurm host lists (``n[1-2]``, ``r[1-2]-n[01-02]``, ``a1,b[3-5,7]``) as plain host names.

The node agent prefers ``scontrol show hostnames`` (Slurm's own parser); this is
the fallback for nodes without it, and it must agree with Slurm: several bracket
groups in one name are a cartesian product, zero padding is kept, and commas
inside brackets are not host separators.
"""

from __future__ import annotations

import itertools
import re

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _split_top(spec: str) -> list[str]:
    """Split on commas that are outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(spec):
        if ch == "[":
            if depth:
                raise ValueError(f"nested '[' in host list {spec!r}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise ValueError(f"unbalanced ']' in host list {spec!r}")
            depth = 0
        elif ch == "," and not depth:
            parts.append(spec[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"unbalanced '[' in host list {spec!r}")
    parts.append(spec[start:])
    return [p.strip() for p in parts if p.strip()]


def _range(body: str, spec: str) -> list[str]:
    """``01-03,7`` -> ``['01', '02', '03', '7']`` (width of the lower bound kept)."""
    values: list[str] = []
    for item in body.split(","):
        m = _RANGE.match(item.strip())
        if not m:
            raise ValueError(f"bad range '{item}' in host list {spec!r}")
        low, high = m.group(1), m.group(2)
        if high is None:
            values.append(low)
            continue
        if int(high) < int(low):
            raise ValueError(f"descending range '{item}' in host list {spec!r}")
        width = len(low) if low.startswith("0") and len(low) > 1 else 0
        values += [str(n).zfill(width) for n in range(int(low), int(high) + 1)]
    return values


def _expand_one(name: str, spec: str) -> list[str]:
    pieces = re.split(r"(\[[^\]]*\])", name)
    choices = [_range(p[1:-1], spec) if p.startswith("[") else [p] for p in pieces if p != ""]
    return ["".join(combo) for combo in itertools.product(*choices)]


def expand(spec: str) -> list[str]:
    """Every host of a Slurm host list, in Slurm's order (duplicates kept, as Slurm does)."""
    hosts: list[str] = []
    for part in _split_top(spec.strip()):
        hosts += _expand_one(part, spec)
    return hosts


def first(spec: str) -> str:
    hosts = expand(spec)
    if not hosts:
        raise ValueError(f"empty host list {spec!r}")
    return hosts[0]
