"""The variables each node's job is given by the node agent, never by the submitting host:
``NNODES``, ``NODE_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``, ``GPUS_PER_NODE``.

The plan file holds their rule (``rule``, written on the submitting host); ``values`` turns it
into one node's values from Slurm's environment on that node; ``shown`` is how the dry run
states them. Light on purpose: the node agent imports it.
"""

from __future__ import annotations

import re
import socket
from typing import Mapping

from runner.engines.slurm.node import COMPUTED as NAMES, address_of, master_address


def rule(nodes: int, master_port: int, gpus_asked: int | None, gpus_otherwise: int) -> dict:
    """The plan file's ``slurm`` facts the values come from. ``gpus_asked``: the count the user gave
    for every node (``--gpus-per-node``; 0 for a container without GPUs), which beats the
    allocation; ``gpus_otherwise``: ``slurm.gpus_per_node``, used where Slurm allocated no GPU."""
    return {"nodes": nodes, "master_port": master_port, "gpus_per_node": {"asked": gpus_asked, "otherwise": gpus_otherwise}}


def allocated_gpus(environ: Mapping[str, str]) -> int | None:
    """How many GPUs Slurm gave this node's step: ``SLURM_GPUS_ON_NODE``, else the gres indices it
    lists (``SLURM_STEP_GPUS``, ``SLURM_JOB_GPUS``); None when it gave none."""
    on_node = (environ.get("SLURM_GPUS_ON_NODE") or "").strip()
    if on_node.isdigit():
        return int(on_node)
    for name in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS"):
        indices = [i for i in re.split(r"[,\s]+", environ.get(name) or "") if i]
        if indices:
            return len(indices)
    return None


def gpus_per_node(gpus: Mapping, environ: Mapping[str, str]) -> int:
    """``--gpus-per-node`` as given, else the allocation on this node, else ``slurm.gpus_per_node``."""
    if gpus["asked"] is not None:
        return int(gpus["asked"])
    found = allocated_gpus(environ)
    return found if found is not None else int(gpus["otherwise"])


def values(slurm: Mapping, environ: Mapping[str, str], rank: str) -> dict[str, str]:
    """This node's values (``environ``: the node agent's, as Slurm started it)."""
    return {
        "NNODES": environ.get("SLURM_NNODES", str(slurm["nodes"])),
        "NODE_RANK": rank,
        # The batch script asked slurmctld once for the whole job; a step started otherwise asks itself.
        "MASTER_ADDR": address_of(environ["PRIMUS_MASTER_NODEADDR"]) if environ.get("PRIMUS_MASTER_NODEADDR") else
        master_address(environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST") or socket.gethostname()),
        "MASTER_PORT": str(slurm["master_port"]),
        "GPUS_PER_NODE": str(gpus_per_node(slurm["gpus_per_node"], environ)),
    }


def shown(slurm: Mapping) -> dict[str, str]:
    """The values as the dry run states them: fixed ones as they are, the others by their rule."""
    gpus = slurm["gpus_per_node"]
    last = slurm["nodes"] - 1
    return {
        "NNODES": str(slurm["nodes"]),
        "NODE_RANK": "0" if last == 0 else f"0 … {last} (the node's rank)",
        "MASTER_ADDR": "the first node's address (its NodeAddr, asked once by the batch script)",
        "MASTER_PORT": str(slurm["master_port"]),
        "GPUS_PER_NODE": str(gpus["asked"]) if gpus["asked"] is not None else
        f"the GPUs Slurm allocates on the node (SLURM_GPUS_ON_NODE), else {gpus['otherwise']} (slurm.gpus_per_node)",
    }
