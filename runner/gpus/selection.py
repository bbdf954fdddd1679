"""``--gpus all | N | LIST``: parsed once, resolved against the GPUs a host has.

LIST is indices and ranges (``0-3,5``) or UUIDs, as ``AMD_VISIBLE_DEVICES`` and
``NVIDIA_VISIBLE_DEVICES`` write them: ROCm's ``unique_id`` as ``GPU-<hex>`` or
``0x<hex>``, NVIDIA's ``GPU-<uuid>``. ``N`` asks for N GPUs no other job holds
(``holders`` picks them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from runner.gpus.model import Gpu, GpuError

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
FORMS = "all, a count N, or a list of indices/ranges/UUIDs such as 0-3,5 or GPU-…"


@dataclass(frozen=True)
class Selection:
    """What was asked: ``kind`` is all | count | list; ``items`` are indices (int) or UUIDs (str)."""

    kind: str
    count: int = 0
    items: tuple = ()
    text: str = "all"

    @property
    def explicit(self) -> bool:
        return self.kind != "all"


ALL = Selection("all")


def parse(text) -> Selection:
    """``all``, ``N`` or a LIST; ``GpuError`` (exit 2) for anything else or overlapping ranges."""
    raw = str(text).strip() if text is not None else "all"
    if raw.lower() == "all" or raw == "":
        return ALL
    if raw.isdigit():
        return Selection("count", count=int(raw), text=raw)
    body = raw.strip("\"'")
    if body.startswith("device="):  # Docker's --gpus '"device=5"': one index is a list, not a count
        body = body[len("device="):]
    items: list = []
    seen: dict[int, str] = {}
    for part in body.split(","):
        part = part.strip()
        match = _RANGE.match(part)
        if match:
            low, high = int(match.group(1)), int(match.group(2) if match.group(2) is not None else match.group(1))
            if high < low:
                raise GpuError(f"--gpus {raw}: the range {part} runs backwards", hint="write ranges low-high, e.g. 0-3")
            for index in range(low, high + 1):
                if index in seen:
                    raise GpuError(f"--gpus {raw}: GPU {index} is named twice ({seen[index]} and {part}): the ranges overlap",
                                   hint="name each GPU once, e.g. 0-3,5")
                seen[index] = part
                items.append(index)
        elif re.fullmatch(r"(GPU-|0x)[0-9A-Fa-f-]+", part):
            if normal_uuid(part) in {normal_uuid(i) for i in items if isinstance(i, str)}:
                raise GpuError(f"--gpus {raw}: {part} is named twice", hint="name each GPU once")
            items.append(part)
        else:
            raise GpuError(f"--gpus {raw}: {part!r} is not an index, a range or a UUID", hint=f"use {FORMS}")
    return Selection("list", items=tuple(items), text=raw)


def normal_uuid(text: str) -> str:
    """One spelling for comparison: ROCm ``0xEF2C…`` = ``GPU-ef2c…``; NVIDIA ``GPU-…`` as is (lower case)."""
    t = text.strip().lower()
    for prefix in ("gpu-", "0x"):
        if t.startswith(prefix):
            t = t[len(prefix):]
    return t.replace("-", "").lstrip("0") or "0"


def pick_listed(selection: Selection, found: Sequence[Gpu], flavor: str) -> list[Gpu]:
    """The GPUs a LIST names, in the order given; each must exist."""
    by_uuid = {normal_uuid(g.uuid): g for g in found}
    chosen: list[Gpu] = []
    for item in selection.items:
        if isinstance(item, int):
            if item >= len(found):
                have = f"0-{len(found) - 1}" if found else "none"
                raise GpuError(f"--gpus {selection.text}: there is no {flavor} GPU {item} on this host (found {len(found)}: {have})",
                               hint="primus-runner check --gpu " + flavor + " lists them")
            gpu = found[item]
        else:
            gpu = by_uuid.get(normal_uuid(item))
            if gpu is None:
                raise GpuError(f"--gpus {selection.text}: no {flavor} GPU has the UUID {item} (found: "
                               f"{', '.join(g.uuid for g in found) or 'none'})", hint="primus-runner check --gpu " + flavor + " lists them")
        if gpu in chosen:
            raise GpuError(f"--gpus {selection.text}: GPU {gpu.index} ({gpu.uuid}) is named twice", hint="name each GPU once")
        chosen.append(gpu)
    return chosen
