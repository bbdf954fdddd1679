"""Do the Slurm nodes see a path of this host? A job's files must be where every node reads them.

Told two ways, without running anything on a node: the path is on a network file
system (NFS, Lustre, GPFS, BeeGFS, CephFS …), or every node's slurmd runs on this
host (``scontrol show node``: its ``NodeHostName``), as on a one-machine cluster.
A path on a local disk of this host with nodes elsewhere is not seen; without
``scontrol`` it cannot be told (the submission fails on its own then).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from runner import subprocesses
from runner.engines.slurm.node import SLURM_OUTPUT_BYTES
from runner.errors import RunnerError

NETWORK_FS = {
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "fuse.ceph", "fuse.cephfs",
    "glusterfs", "fuse.glusterfs", "panfs", "wekafs", "orangefs", "pvfs2", "fuse.sshfs", "9p", "afs", "ocfs2", "gfs2",
    "fuse.juicefs", "quobyte", "fuse.quobyte", "virtiofs",
}


def fs_type(path: Path) -> str | None:
    """The type of the file system holding ``path`` (its nearest existing ancestor), from /proc/self/mountinfo."""
    real = Path(path)
    while not real.exists() and real != real.parent:
        real = real.parent
    real_s = os.path.realpath(real)
    best, kind = "", None
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        point = parts[4].replace("\\040", " ")
        if (real_s == point or real_s.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, rest.split()[0]
    return kind


def node_hosts() -> dict[str, str] | None:
    """Each node's slurmd host (``NodeHostName``), or None when ``scontrol`` cannot tell."""
    try:
        done = subprocesses.run(["scontrol", "show", "node", "-o"], timeout=20, max_output=SLURM_OUTPUT_BYTES)
    except RunnerError:
        return None
    if done.returncode != 0:
        return None
    hosts = {}
    for line in done.stdout_text.splitlines():
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        if fields.get("NodeName"):
            hosts[fields["NodeName"]] = fields.get("NodeHostName") or fields["NodeName"]
    return hosts


def nodes_see(path: Path) -> tuple[bool | None, str]:
    """(True, why) when every node sees ``path``, (False, why not), or (None, why it cannot be told)."""
    kind = fs_type(path)
    if kind in NETWORK_FS:
        return True, f"{kind}, a network file system"
    hosts = node_hosts()
    if hosts is None:
        return None, "scontrol does not answer"
    here = {socket.gethostname(), socket.getfqdn(), "localhost"}
    elsewhere = sorted(node for node, host in hosts.items() if host not in here)
    if not elsewhere:
        return True, "every node runs on this host"
    shown = ", ".join(elsewhere[:3]) + (" …" if len(elsewhere) > 3 else "")
    return False, f"it is on {kind or 'a file system'} local to this host, and node{'s' if len(elsewhere) > 1 else ''} {shown} run{'' if len(elsewhere) > 1 else 's'} elsewhere"
