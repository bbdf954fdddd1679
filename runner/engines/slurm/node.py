"""What the node agent asks of Slurm on its node: the job id it runs in, the plan file's digest,
the master's address (``scontrol``, run here too for ``job_state``). Small on purpose: ``srun``
starts the agent on every node, and it must not load the submit side (``submit``,
``job_output``: sbatch, squeue, the log followers) to get these."""

from __future__ import annotations

import hashlib
import json
import re
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from runner.errors import EngineUnavailable, UsageError

if TYPE_CHECKING:
    import subprocess

# What the submit side and the node agent agree on (``script`` writes them, the agent reads them).
PLAN_FORMAT = "primus-runner/slurm-plan/1"
LABEL_SLURM_JOB = "io.primus-runner.slurm-job"
LABEL_NODE_RANK = "io.primus-runner.node-rank"
PLAN_DIGEST = "PRIMUS_RUNNER_PLAN_SHA256"  # the plan file's sha256, in the job's environment: checked on every node
MASK_PREFIX = "PRIMUS_RUNNER_MASK_"  # agent-only: a secret inside a forwarded value, for the node's masker
# A job variable travels in the job's environment under this prefix, never under its own name: no
# Slurm tool (srun, scontrol in the batch script) reads a ``PRIMUS_RUNNER_ENV_*`` name, so a forwarded
# ``SLURM_CONF`` or ``SRUN_*`` reaches the job and configures nothing on the way.
CARRIED_PREFIX = "PRIMUS_RUNNER_ENV_"

# Computed by each node's agent (``computed``); never taken from the submitting host.
COMPUTED = ("NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "GPUS_PER_NODE")

# A Slurm query answers in lines per node or job: generous for a large cluster, still a bound.
SLURM_OUTPUT_BYTES = 64 << 20
_JOB_ID = re.compile(r"^\d+(_\d+)?$")


def is_job_id(text: str) -> bool:
    """``1234`` or ``1234_5`` (an array task): Slurm's own kind of id."""
    return bool(_JOB_ID.fullmatch(text))  # not match: its $ also matches before a final newline


def require_job_id(job: str) -> str:
    if not is_job_id(job):
        raise UsageError(f"'{job}' is not a Slurm job id", "pass the number submit printed, e.g. primus-runner status 1234")
    return job


def carried(name: str) -> str:
    """The name a job variable has in the job's environment, between sbatch and the node's container."""
    return CARRIED_PREFIX + name


def plan_digest(text: str) -> str:
    """What the node agent checks the plan file against (carried in the job's environment, held by slurmctld)."""
    return hashlib.sha256(text.encode()).hexdigest()


def run(cmd: list[str], timeout: float = 30, env: dict | None = None, umask: int = -1, stdin: bytes | None = None) -> "subprocess.CompletedProcess":
    """A Slurm command's output (``stdin``: bytes it reads); ``EngineUnavailable`` when it does not answer in time."""
    import subprocess

    from runner import subprocesses

    try:
        done = subprocesses.run(cmd, timeout=timeout, env=env, umask=umask, stdin=stdin, max_output=SLURM_OUTPUT_BYTES)
    except subprocesses.ProgramTimedOut as exc:
        raise EngineUnavailable(f"{cmd[0]} did not answer within {timeout:.0f} s", "check that slurmctld is running (scontrol ping)") from exc
    return subprocess.CompletedProcess(list(done.argv), done.returncode, done.stdout_text, done.stderr_text)


def parse_job(text: str) -> dict[str, str]:
    """``scontrol show job -o`` (one line of Key=Value) as a dict."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    keys = list(re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=", line))
    fields = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(line)
        fields[m.group(1)] = line[m.end():end].strip()
    return fields


def hostnames(nodelist: str) -> list[str]:
    import shutil

    if shutil.which("scontrol"):
        result = run(["scontrol", "show", "hostnames", nodelist], timeout=20)
        if result.returncode == 0 and result.stdout.split():
            return result.stdout.split()
    from runner.engines.slurm.nodelist import expand

    return expand(nodelist)


def node_field(node: str, key: str) -> str | None:
    import shutil

    if not shutil.which("scontrol"):
        return None
    result = run(["scontrol", "show", "node", "-o", node], timeout=20)
    if result.returncode != 0:
        return None
    return parse_job(result.stdout).get(key) or None


def master_address(nodelist: str) -> str:
    """The first node of the allocation as an address every node can reach.

    Slurm's NodeAddr is how slurmctld itself reaches the node, so it is the
    best answer (several nodes may share one NodeHostname, as on a test
    cluster); a name is resolved to an IP so every container sees the same.
    """
    first = hostnames(nodelist)[0]
    return address_of(node_field(first, "NodeAddr") or first)


def address_of(addr: str) -> str:
    """A node's address as an IP (a name resolved here), so every container sees the same."""
    try:
        socket.inet_aton(addr)
        return addr
    except OSError:
        pass
    try:
        return socket.getaddrinfo(addr, None, socket.AF_INET)[0][4][0]
    except OSError:
        return addr


def planned_engine(plan_file: str | Path | None) -> str:
    """``container.engine`` as the job's plan file records it; ``auto`` without one (a plan file
    from before the field, or none given)."""
    if not plan_file:
        return "auto"
    try:
        return str(json.loads(Path(plan_file).read_text())["plan"].get("container_engine") or "auto")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "auto"
