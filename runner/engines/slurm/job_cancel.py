"""Cancelling a job and removing its containers, here and on its other nodes (a cleanup job)."""

from __future__ import annotations

import shlex
import socket
import time
from pathlib import Path

from runner.engines.slurm.controller import kill_wait_of, show_config, tool
from runner.engines.slurm.job_state import JobState, job_state
from runner.engines.slurm.node import hostnames, node_field, planned_engine, require_job_id, run as _run
from runner.engines.slurm.script import LABEL_SLURM_JOB, PLAN_FILE, SCRIPT_FILE, agent_command
from runner.engines.slurm.values import ScriptValue
from runner.errors import EngineUnavailable, RuntimeFailure, UsageError
from runner.ui import Output


def cmd_cancel(job: str, out: Output, dry_run: bool = False) -> int:
    job_id = require_job_id(job)
    state = job_state(job_id)
    if state is None:
        raise UsageError(f"Slurm does not know job {job_id}", "check the id with squeue")
    nodes = state.fields.get("NodeList", "")
    plan_file = plan_file_of(state)
    if dry_run:  # read-only: the job's state, nothing cancelled or removed
        what = "already ended" if state.done else f"scancel {job_id}"
        out.info(f"dry run: would cancel job {job_id} ({state.slurm_state}: {what}) and remove its containers on {nodes or 'its nodes'}")
        return 0
    if not state.done:
        result = _run([tool("scancel"), job_id], timeout=30)
        if result.returncode != 0:
            raise RuntimeFailure(f"scancel {job_id} failed: {result.stderr.strip()}")
        # Remove containers only once Slurm has stopped the agents, or one could start after us.
        grace = kill_wait_of(show_config()) or 30
        deadline = time.monotonic() + grace + 30
        delay = 0.1
        while time.monotonic() < deadline:
            state = job_state(job_id)
            if state is None or (state.done and state.slurm_state != "COMPLETING"):
                break
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)
    removed = remove_job_containers(job_id, nodes, plan_file)
    out.info(f"job {job_id} cancelled; {removed} container(s) removed")
    return 0


def _remote_nodes(nodes: str) -> list[str]:
    """Nodes of the allocation whose slurmd runs on another host than this one."""
    if not nodes or nodes == "(null)":
        return []
    here = {socket.gethostname(), socket.getfqdn()}
    remote = []
    for node in hostnames(nodes):
        host = node_field(node, "NodeHostName") or node
        if host not in here:
            remote.append(node)
    return remote


def remove_job_containers(job_id: str, nodes: str = "", plan_file: Path | None = None) -> int:
    """Remove the job's containers here, and on the other nodes through a cleanup step, on the
    engine the job's plan file names (``container.engine``)."""
    removed = 0
    try:
        from runner.clients.engine_api.shared import engine_client
        from runner.engines.containers import remove_containers

        removed = remove_containers({LABEL_SLURM_JOB: job_id}, engine_client(planned_engine(plan_file)))
    except EngineUnavailable:
        pass
    remote = _remote_nodes(nodes)
    if remote:
        cleanup_on_nodes(job_id, remote, wait=False, plan_file=plan_file)
    return removed


def plan_file_of(state: JobState) -> Path | None:
    """The job's plan file: next to its batch script (Slurm's ``Command``), when that is the runner's."""
    script = Path(state.fields.get("Command") or "")
    return script.with_name(PLAN_FILE) if script.name == SCRIPT_FILE else None


def cleanup_on_nodes(job_id: str, nodes: list[str], wait: bool = True, timeout: float = 300, plan_file: Path | None = None) -> int:
    """Run ``node-agent --cleanup JOB`` once on each node (after a cancel, ``srun --jobid`` is impossible).

    ``cancel`` does not wait for it: on a busy cluster the cleanup job may queue.
    """
    agent = " ".join(shlex.quote(a) for a in agent_command())
    plan = f" {shlex.quote(str(plan_file))}" if plan_file else ""
    wrap = f"srun --ntasks-per-node=1 {agent} node-agent --cleanup {job_id}{plan}"
    argv = [tool("sbatch"), "--parsable", *(["--wait"] if wait else []), f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
            "--ntasks-per-node=1", "--time=5", "--job-name=primus-cleanup", "--export=PATH", "--output=/dev/null", f"--wrap={wrap}"]
    result = _run([ScriptValue(arg, "the cleanup job's command line") for arg in argv], timeout=timeout)  # a plan path from Slurm: one line
    return result.returncode
