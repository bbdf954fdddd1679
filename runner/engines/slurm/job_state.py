"""What slurmctld (or accounting) says of a job: its state, exit code and progress, how often to
ask (``Backoff``), and ``status JOB``."""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from runner.engines.slurm.controller import UNREACHABLE, tool
from runner.engines.slurm.node import hostnames, parse_job, require_job_id, run as _run
from runner.errors import EngineUnavailable, UsageError
from runner.ui import Output


STATES = {
    "PENDING": "pending", "CONFIGURING": "pending", "REQUEUED": "pending", "REQUEUE_HOLD": "pending",
    "REQUEUE_FED": "pending", "RESV_DEL_HOLD": "pending",
    "RUNNING": "running", "COMPLETING": "running", "SUSPENDED": "running", "STOPPED": "running",
    "RESIZING": "running", "SIGNALING": "running", "STAGE_OUT": "running",
    "COMPLETED": "completed",
    "FAILED": "failed", "NODE_FAIL": "failed", "BOOT_FAIL": "failed", "OUT_OF_MEMORY": "failed", "DEADLINE": "failed",
    "CANCELLED": "cancelled", "PREEMPTED": "cancelled", "REVOKED": "cancelled",
    "TIMEOUT": "timeout",
}


DONE = {"completed", "failed", "cancelled", "timeout"}


def exit_code_of(fields: dict[str, str]) -> int | None:
    """Slurm's ``ExitCode=code:signal`` as one shell-style number (128+signal when signalled)."""
    m = re.match(r"^(\d+):(\d+)$", fields.get("ExitCode", ""))
    if not m:
        return None
    code, signal = int(m.group(1)), int(m.group(2))
    return code if code or not signal else 128 + signal


@dataclass(frozen=True)
class JobState:
    job_id: str
    state: str  # pending | running | completed | failed | cancelled | timeout
    exit_code: int | None
    slurm_state: str
    fields: dict

    @property
    def done(self) -> bool:
        return self.state in DONE


def job_state(job_id: str) -> JobState | None:
    """The job as slurmctld (or, after MinJobAge, accounting) knows it; None when unknown."""
    result = _run([tool("scontrol"), "show", "job", "-o", job_id], timeout=20)
    if result.returncode == 0 and result.stdout.strip():
        fields = parse_job(result.stdout)
        raw = fields.get("JobState", "UNKNOWN").split()[0]
        state = STATES.get(raw, "failed" if raw not in ("UNKNOWN",) else "running")
        return JobState(job_id, state, exit_code_of(fields) if state in DONE else None, raw, fields)
    if "Invalid job id" not in (result.stderr or "") and result.returncode != 0:
        what = "slurmctld does not answer" if UNREACHABLE.search(result.stderr or "") else "scontrol show job failed"
        raise EngineUnavailable(f"{what}: {result.stderr.strip()}", "check that slurmctld is running (scontrol ping)")
    if shutil.which("sacct"):  # finished jobs, when the cluster keeps accounting
        acct = _run(["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "State,ExitCode"], timeout=20)
        line = acct.stdout.strip().splitlines()[0] if acct.returncode == 0 and acct.stdout.strip() else ""
        if line:
            raw, _, code = line.partition("|")
            raw = raw.split()[0]
            state = STATES.get(raw, "failed")
            return JobState(job_id, state, exit_code_of({"ExitCode": code}) if state in DONE else None, raw, {})
    return None


# Polling slurmctld: one ``scontrol show job -o JOB`` per poll, first after POLL_FIRST seconds,
# doubling to POLL_MAX while nothing changes, back to POLL_FIRST on a change (docs/slurm.md).
# Reading the job's output file is local and stays fast (FILE_POLL).
POLL_FIRST, POLL_MAX, FILE_POLL = 1.5, 30.0, 0.25


class Backoff:
    """The delay before the next query: ``POLL_FIRST`` after a change, doubling up to ``POLL_MAX``."""

    def __init__(self, first: float = POLL_FIRST, cap: float = POLL_MAX):
        self.first, self.cap, self.delay = first, cap, first

    def next(self, changed: bool) -> float:
        self.delay = self.first if changed else min(self.delay * 2, self.cap)
        return self.delay


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(max(0, seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def _duration(text: str | None) -> float | None:
    """Slurm's ``[D-]HH:MM:SS`` (RunTime) in seconds."""
    m = re.match(r"^(?:(\d+)-)?(\d+):(\d{2}):(\d{2})$", text or "")
    if not m:
        return None
    days, h, mi, sec = (int(g or 0) for g in m.groups())
    return ((days * 24 + h) * 60 + mi) * 60 + sec


def _since(stamp: str | None) -> float | None:
    try:
        return time.time() - datetime.strptime(stamp or "", "%Y-%m-%dT%H:%M:%S").timestamp()
    except ValueError:
        return None


def describe(state: JobState) -> dict:
    """What a person wants to know: Slurm's state with its reason, the nodes, the time, restarts."""
    f = state.fields
    reason = f.get("Reason") if f.get("Reason") not in (None, "", "None", "(null)") else None
    nodes = f.get("NodeList") if f.get("NodeList") not in (None, "", "(null)") else None
    restarts = int(f["Restarts"]) if f.get("Restarts", "").isdigit() else 0
    elapsed = _since(f.get("SubmitTime")) if state.state == "pending" else _duration(f.get("RunTime"))
    return {"slurm_state": state.slurm_state, "reason": reason, "nodes": nodes, "elapsed": elapsed, "restarts": restarts}


def progress_text(job_id: str, state: JobState, elapsed: float | None = None) -> str:
    d = describe(state)
    elapsed = d["elapsed"] if elapsed is None else elapsed
    text = f"job {job_id}: {d['slurm_state']}"
    if state.state == "pending" and d["reason"]:
        text += f" ({d['reason']})"
    if state.state == "running" and d["nodes"]:
        text += f" on {d['nodes']}"
    if state.done and state.exit_code is not None:
        text += f" (exit {state.exit_code})"
    text += f", {'after' if state.done else 'for'} {_clock(elapsed)}"
    if d["restarts"]:
        text += f", restarted {d['restarts']} time(s)"
    return text


def final_exit_code(state: JobState | None, job_dir: Path, job_id: str) -> int:
    """The job's code: Slurm's ExitCode, else the agents' exit files (the failing rank's code)."""
    codes = []
    for path in sorted(job_dir.glob(f"exit-{job_id}-*")):
        try:
            codes.append(int(path.read_text().strip()))
        except ValueError:
            pass
    failing = next((c for c in codes if c not in (0, 130, 143)), next((c for c in codes if c), 0))
    if state is None:
        return failing if codes else 1
    code = state.exit_code or 0
    if state.state == "cancelled" and not code:
        return 143
    if state.state in ("failed", "timeout") and not code:
        return failing or 1
    return code


def lost_agents(state: JobState | None, job_dir: Path, job_id: str) -> list[str]:
    """For a failed job: the nodes whose agent wrote no exit code (killed, or the node failed)."""
    if state is None or state.state not in ("failed", "timeout") or not state.fields.get("NodeList"):
        return []
    try:
        nodes = hostnames(state.fields["NodeList"])
    except EngineUnavailable:
        return []
    return [
        f"job {job_id}: the node agent on {node} (rank {rank}) ended without an exit code: it was killed or {node} failed"
        for rank, node in enumerate(nodes) if not (job_dir / f"exit-{job_id}-{rank}").exists()
    ]


def cmd_status(job: str, out: Output) -> int:
    job_id = require_job_id(job)
    tool("scontrol")
    state = job_state(job_id)
    if state is None:
        raise UsageError(f"Slurm does not know job {job_id}", "finished jobs are forgotten after MinJobAge unless the cluster keeps accounting (sacct)")
    if out.json_mode:
        d = describe(state)
        out.json({"job_id": job_id, "state": state.state, "exit_code": state.exit_code, "slurm_state": state.slurm_state,
                  "reason": d["reason"], "nodes": d["nodes"], "elapsed": None if d["elapsed"] is None else int(d["elapsed"]),
                  "restarts": d["restarts"]})
    else:
        out.result(progress_text(job_id, state))
    return 0
