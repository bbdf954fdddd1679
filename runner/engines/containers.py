"""The runner's own containers on a container engine (Docker or Podman), found by label: the one place
that lists and removes them (``ps``, ``down``, the launcher's ``--clean``, a Slurm job's cleanup on
its nodes). Every filter is ANDed with the managed label, so no other container is ever touched.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from runner.launch_plan import LABEL, LABEL_OWNER

if TYPE_CHECKING:
    from runner.clients.engine_api import Engine


def owner_filter(all_users: bool = False) -> dict[str, str]:
    """The label filter of the invoking user's containers (nothing with ``all_users``)."""
    return {} if all_users else {LABEL_OWNER: str(os.getuid())}


def managed(eng: "Engine", filters: dict[str, str]) -> list[dict]:
    """The runner's containers on ``eng`` that carry every one of these labels."""
    return eng.containers([f"{LABEL}=true"] + [f"{k}={v}" for k, v in filters.items()])


def remove_containers(filters: dict[str, str], eng: "Engine | None" = None) -> int:
    """Stop and remove the runner's containers matching these labels, on ``eng`` (default: the
    process's client); how many."""
    if eng is None:
        from runner.clients.engine_api.shared import engine_client

        eng = engine_client()
    count = 0
    for item in managed(eng, filters):
        if item.get("State") == "running":
            eng.stop(item["Id"])
        eng.remove(item["Id"])
        count += 1
    return count


def name_of(item: dict) -> str:
    names = item.get("Names") or [item.get("Id", "")[:12]]
    return names[0].lstrip("/")


def would_remove(items: list[dict]) -> str:
    """What a dry run of ``down``/``--clean`` says: ``would remove N: names…`` (nothing is touched)."""
    names = [name_of(item) for item in items]
    return f"would remove {len(names)}" + (f": {', '.join(names)}" if names else "")
