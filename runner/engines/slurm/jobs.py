"""Talking to Slurm: submit, follow, status, cancel, clean up; node facts for the agent."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import stat
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from runner.engines.base import TAIL_LIMIT
from runner.engines.slurm.node import carried, hostnames, node_field, parse_job, plan_digest, planned_engine, require_job_id, run as _run
from runner.engines.slurm.script import COMPUTED, LABEL_SLURM_JOB, PLAN_DIGEST, PLAN_FILE, SCRIPT_FILE, SlurmRequest, SlurmSettings, agent_command
from runner.engines.slurm.values import ScriptValue
from runner.errors import ConfigError, EngineUnavailable, Problem, RuntimeFailure, UsageError
from runner.secrets import Masker, Secret
from runner.secrets.argv import refuse_secret_argv
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


# --------------------------------------------------------------------------- slurm calls
def tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise EngineUnavailable(f"{name} not found: Slurm's client tools are not installed here", "install slurm-client or load your site's Slurm module")
    return path


# What Slurm's clients print when slurmctld is down or unreachable (not a refusal of the job).
_UNREACHABLE = re.compile(r"Unable to contact slurm controller|Socket timed out|Connection refused|Zero Bytes were transmitted")


def check_engine() -> list[str]:
    """Raise ``EngineUnavailable`` when Slurm cannot take a job; return warnings."""
    for name in ("sbatch", "srun", "sinfo", "scontrol"):
        tool(name)
    probe = _run(["sinfo", "-h", "-o", "%P"], timeout=20)
    if probe.returncode != 0:
        raise EngineUnavailable(f"slurmctld does not answer: {probe.stderr.strip()}", "start slurmctld or check SLURM_CONF")
    warnings = []
    config = _run(["scontrol", "show", "config"], timeout=20)
    return warnings + accounting_warnings(config.stdout)


def show_config() -> str:
    """``scontrol show config`` (empty when it does not answer: ``check_engine`` reports that)."""
    try:
        return _run([tool("scontrol"), "show", "config"], timeout=20).stdout
    except EngineUnavailable:
        return ""


def refuse_archived_secrets(show_config_text: str, secret_names: list[str], allowed: bool) -> None:
    """Refuse (exit 2) a job that forwards secrets to a cluster whose accounting stores job
    environments (``AccountingStoreFlags=job_env``): slurmdbd would archive their values,
    readable by the cluster's admins for as long as accounting is kept."""
    flags = re.search(r"^AccountingStoreFlags\s*=\s*(.*)$", show_config_text, re.M)
    if allowed or not secret_names or not flags or "job_env" not in flags.group(1):
        return
    raise ConfigError(Problem(
        f"this cluster's accounting stores job environments (AccountingStoreFlags={flags.group(1).strip()}): "
        f"slurmdbd would archive the values of {', '.join(secret_names)}",
        hint="ask the cluster's admins to drop job_env from AccountingStoreFlags, or accept it for this project "
             "with slurm.allow_env_in_accounting: true",
    ))


def accounting_warnings(show_config: str) -> list[str]:
    """Warn when Slurm keeps batch scripts or job environments (secret values!) in its accounting."""
    warnings = []
    flags = re.search(r"^AccountingStoreFlags\s*=\s*(.*)$", show_config, re.M)
    if flags:
        stored = [f for f in ("job_script", "job_env") if f in flags.group(1)]
        if stored:
            warnings.append(
                f"Slurm stores {' and '.join(stored)} in its accounting (AccountingStoreFlags={flags.group(1).strip()}): "
                "batch scripts hold names only, but job environments (secret values included) are kept in the accounting database"
                if "job_env" in stored
                else f"Slurm stores batch scripts in its accounting (AccountingStoreFlags={flags.group(1).strip()}); the runner's scripts hold names only"
            )
    return warnings


def kill_wait_of(show_config_text: str) -> int | None:
    """Slurm's ``KillWait`` (seconds from SIGTERM to SIGKILL) from ``scontrol show config``."""
    m = re.search(r"^KillWait\s*=\s*(\d+)", show_config_text, re.M)
    return int(m.group(1)) if m else None


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
        what = "slurmctld does not answer" if _UNREACHABLE.search(result.stderr or "") else "scontrol show job failed"
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



# --------------------------------------------------------------------------- files
def write_private(path: Path, text: str, masker: Masker) -> None:
    """Write a 0600 file, refusing if a secret value slipped into it (defence in depth)."""
    data = text.encode()
    if masker.contains_secret(data):
        raise ConfigError(Problem(f"refusing to write {path}: it would contain a secret value (is one in the command line?)"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def job_dir_for(settings: SlurmSettings, name: str) -> Path:
    """The job directory a request names: the first free one (read-only; ``make_job_dir`` makes it)."""
    base = Path(settings.output_dir).expanduser() if settings.output_dir else Path.cwd() / "primus-runs"
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    path = (base / f"{stamp}-{safe}").absolute()
    for i in range(1000):
        candidate = path if i == 0 else path.with_name(f"{path.name}-{i}")
        if not candidate.exists():
            return candidate
    raise RuntimeFailure(f"cannot find a free job directory under {base}")


def make_job_dir(path: Path) -> Path:
    """Create exactly the directory the request's script names (0700), in a place no other user controls.

    The node agent reads the plan file from it while the job is queued: another user who
    could replace the directory (a parent they own or may write to) could run their image
    with your secrets. Refused (exit 2) before anything is written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    _refuse_foreign(path.parent)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        if not (path / PLAN_FILE).exists():  # the run's own directory, its tracker outputs already made (runner.runs)
            return path
        raise RuntimeFailure(f"the job directory {path} appeared meanwhile (another submission?)", "submit again") from None
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise ConfigError(Problem(f"the job directory {path} is not a directory of yours with mode 0700"))
    return path


def _refuse_foreign(parent: Path) -> None:
    """A job directory's parent must be yours (or root's), and writable by nobody else unless sticky (/tmp)."""
    st = os.stat(parent)
    mine = st.st_uid in (os.getuid(), 0)
    open_to_others = st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX
    if not mine or open_to_others:
        who = "another user owns it" if not mine else "other users may write to it"
        raise ConfigError(Problem(
            f"the job directory would be inside {parent}, and {who}: they could swap the job's plan while it is queued",
            hint="set slurm.output_dir (or run from) a directory of your own, e.g. chmod go-w it",
        ))




# --------------------------------------------------------------------------- submit
def sbatch(request: SlurmRequest, masker: Masker, agent_values: dict | None = None) -> str:
    """Write the job's files (0600 in a 0700 directory) and submit; the job id.

    sbatch runs in the user's own environment; the job's values reach it on its stdin
    (``job_environment``), so none of them configures sbatch.
    ``agent_values``: the agent-only names of ``request.agent_env`` (registry login) and their values.
    """
    sbatch_path = tool("sbatch")
    tool("srun")
    refuse_secret_argv(request.command(sbatch_path), masker, "sbatch")  # its argv is world-readable, like the script it names
    plan_text = _write_job_files(request, masker)
    env = {k: v for k, v in os.environ.items() if k not in ("SBATCH_EXPORT", "SLURM_EXPORT_ENV", "SBATCH_EXPORT_FILE")}
    values = job_environment(request, plan_digest(plan_text), agent_values or {}, env.get("PATH", os.defpath))
    result = _run(request.command(sbatch_path), timeout=60, env=env, umask=0o077, stdin=values)
    del values
    if result.returncode != 0:
        reason = result.stderr.strip() or result.stdout.strip()
        if _UNREACHABLE.search(reason):  # nothing was submitted: exit 1 (engine unavailable), no job directory left
            shutil.rmtree(request.job_dir, ignore_errors=True)
            raise EngineUnavailable(f"slurmctld does not answer, the job was not submitted: {reason}", "start slurmctld or check SLURM_CONF (scontrol ping)")
        raise RuntimeFailure(f"sbatch refused the job: {reason}", f"the script is {request.job_dir / SCRIPT_FILE}; check partition, time and account")
    return result.stdout.strip().split(";")[0]


def _write_job_files(request: SlurmRequest, masker: Masker) -> str:
    """The plan file and the batch script in the job directory (0600); the plan file's text."""
    write_private(request.job_dir / PLAN_FILE, request.plan_file, masker)
    write_private(request.job_dir / SCRIPT_FILE, request.script, masker)
    return request.plan_file


def job_pairs(request: SlurmRequest, digest: str, agent_values: dict, path: str) -> list[tuple[str, str]]:
    """What the job's environment is given: each job variable under its carried name; the user's
    ``PATH`` (the batch script's, where it finds srun: with an export file, sbatch takes even
    ``--export`` names from it); the plan file's digest, which slurmctld keeps with the job (a swapped
    plan file does not match); the agent's own names (registry login, masks)."""
    def text(value) -> str:
        return value.reveal() if isinstance(value, Secret) else str(value)  # the one unwrap: into the job's environment

    pairs = [(carried(d.name), text(d.value)) for d in request.node_plan.forwarded if d.name not in COMPUTED]
    pairs += [("PATH", path), (PLAN_DIGEST, digest)]
    pairs += [(name, text(agent_values[name])) for name in request.agent_env if agent_values.get(name) is not None]
    for name, value in pairs:
        if "\0" in value:
            raise ConfigError(Problem(f"the value of {name} holds a NUL character, which no environment variable can carry"))
    return pairs


def job_environment(request: SlurmRequest, digest: str, agent_values: dict, path: str) -> bytes:
    """What sbatch reads from its stdin (``--export-file``): ``job_pairs`` as ``NAME=value``, each ended by NUL."""
    return b"".join(f"{name}={value}\0".encode("utf-8", "surrogateescape") for name, value in job_pairs(request, digest, agent_values, path))


def start_step(request: SlurmRequest, masker: Masker, agent_values: dict | None = None):
    """Inside an allocation, the launcher's ``slurm srun``: the batch script run here, its srun a step
    of the allocation (no new job). Its output goes to the job directory's ``slurm-<allocation>.out``
    as a batch job's would; the running script (``follow_step`` waits for it)."""
    import subprocess

    tool("srun")
    plan_text = _write_job_files(request, masker)
    env = dict(os.environ)
    env.update(job_pairs(request, plan_digest(plan_text), agent_values or {}, env.get("PATH", os.defpath)))
    with open(request.job_dir / f"slurm-{request.allocation}.out", "ab") as output:
        os.fchmod(output.fileno(), 0o600)
        step = subprocess.Popen(request.command(), stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)  # its own group: an interrupt reaches srun once, from us
    del env
    return step


def follow_step(step, output: Path, out: Output) -> int:
    """The step's output (rank-prefixed, masked again) until it ends; its exit code."""
    import signal

    follower = Follower(output, RankLines(out.masker, lambda text: (sys.stdout.write(text), sys.stdout.flush()), json_lines=False))
    try:
        while step.poll() is None:
            if not follower.pump():
                time.sleep(FILE_POLL)
    except KeyboardInterrupt:
        os.killpg(step.pid, signal.SIGTERM)  # srun passes it to the agents, which stop their containers
        step.wait()
        out.warn("interrupted: the step was stopped (its agents remove their containers)")
        return 130
    finally:
        while follower.pump():
            pass
        follower.close()
    return step.returncode


def link_output(request: SlurmRequest, job_id: str) -> None:
    """``-o/--output`` and ``-e/--error`` (or ``slurm.output``/``.error``): the job writes where the
    user said; ``slurm-<job>.out`` (``.err``) in the job directory points there, so ``logs JOB``,
    ``--wait`` and the audit read the same file."""
    for key, suffix in (("output", "out"), ("error", "err")):
        pattern = getattr(request.settings, key, None)
        if not pattern:
            continue
        target = Path(expand_filename(str(pattern), job_id, job_name(request)))
        if not target.is_absolute():
            target = Path.cwd() / target  # the batch script's --chdir is the submitting directory
        link = request.job_dir / f"slurm-{job_id}.{suffix}"
        try:
            link.unlink(missing_ok=True)
            link.symlink_to(target)
        except OSError:
            pass  # logs JOB still finds it through scontrol's StdOut while Slurm knows the job


def job_name(request: SlurmRequest) -> str:
    given = request.settings.cli_args
    for i, token in enumerate(given):
        if token in ("-J", "--job-name") and i + 1 < len(given):
            return given[i + 1]
        if token.startswith("--job-name="):
            return token.split("=", 1)[1]
        if token.startswith("-J") and len(token) > 2:
            return token[2:]
    return request.plan.name if re.match(r"^[A-Za-z0-9_.:+,=@/-]+$", request.plan.name) else "primus"


def expand_filename(pattern: str, job_id: str, name: str) -> str:
    """Slurm's filename pattern for a batch job's output (``%j``, ``%x``, ``%u``, ``%A``, ``%%`` …)."""
    import getpass

    values = {"j": job_id, "J": job_id, "A": job_id, "a": "4294967294", "x": name, "u": getpass.getuser(), "%": "%", "s": "batch",
              "t": "0", "n": "0", "N": (os.environ.get("SLURMD_NODENAME") or "")}
    return re.sub(r"%(\d*)([jJAaxusntN%])", lambda m: values[m.group(2)].zfill(int(m.group(1) or 0)), pattern)


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


class _Progress:
    """A live line on a terminal (rich, transient); one line per change elsewhere (CI logs)."""

    def __init__(self, out: Output, job_id: str):
        self.out, self.job_id, self.live, self.state, self.at, self.base, self.shown = out, job_id, None, None, 0.0, None, ""
        if out.interactive:
            from rich.live import Live
            from rich.text import Text

            self._text = Text
            self.live = Live(Text(""), console=out.rich_console(stderr=True), transient=True, auto_refresh=False)
            self.live.start()

    def change(self, state: JobState) -> None:
        self.state, self.at, self.base = state, time.monotonic(), describe(state)["elapsed"]
        if self.live is None:
            self.out.info(progress_text(self.job_id, state))
        self.tick()

    def tick(self) -> None:
        if self.live is None or self.state is None:
            return
        elapsed = None if self.base is None else self.base + time.monotonic() - self.at
        text = self.out.masker.mask(progress_text(self.job_id, self.state, elapsed))
        if text != self.shown:  # redraw only when the line changes (once a second at most)
            self.shown = text
            self.live.update(self._text(text, style="dim"), refresh=True)

    def write(self, text: str) -> bool:
        """Job output above the live line when stdout is that terminal; False: write it yourself."""
        if self.live is None or not sys.stdout.isatty():
            return False
        self.live.console.print(text, end="", markup=False, highlight=False, soft_wrap=True)
        return True

    def close(self, final: JobState | None) -> None:
        if self.live is not None:
            self.live.stop()
        if final is not None and final.done:
            self.out.info(progress_text(self.job_id, final))


def _exit_files(job_dir: Path, job_id: str) -> int:
    try:
        return sum(1 for _ in job_dir.glob(f"exit-{job_id}-*"))
    except OSError:
        return 0


def wait_for(job_id: str, job_dir: Path, out: Output, nodes: int = 0) -> JobState | None:
    """Follow the job to its end: its output (rank-prefixed, masked again) and its state, polled with back-off."""
    progress = _Progress(out, job_id)
    sink = sys.stderr if out.json_mode else sys.stdout

    def write(text: str) -> None:
        if not progress.write(text):
            sink.write(text)
            sink.flush()

    follower = Follower(job_dir / f"slurm-{job_id}.out", RankLines(out.masker, write, json_lines=False))
    backoff, state, key, next_poll, exits = Backoff(), None, None, 0.0, 0
    try:
        while True:
            now = time.monotonic()
            found = _exit_files(job_dir, job_id)
            if found != exits:  # an agent finished (or a requeued run began): the state changes soon
                exits, next_poll = found, min(next_poll, now + 0.5)
                backoff.delay = POLL_FIRST / 2
            if now >= next_poll:
                state = job_state(job_id)
                if state is None or state.done:
                    break
                d = describe(state)
                changed = (state.slurm_state, d["reason"], d["nodes"], d["restarts"]) != key
                key = (state.slurm_state, d["reason"], d["nodes"], d["restarts"])
                if changed:
                    progress.change(state)
                delay = backoff.next(changed)
                if nodes and exits >= nodes:  # every agent is done: the job ends within moments
                    delay = min(delay, POLL_FIRST)
                next_poll = now + delay
            grew = follower.pump()
            progress.tick()
            if not grew:
                time.sleep(FILE_POLL)
        follower.pump()
        follower.close()
    finally:
        progress.close(state)
    return state


# --------------------------------------------------------------------------- the job's output, per rank
# The agents run under `srun --label`: each line of the job's file is "RANK: text" (padded to the
# widest rank); lines without a label come from the batch script itself.
_LABEL = re.compile(rb"^ *(\d+): (.*)$", re.S)


class RankLines:
    """The job file's lines as ``[RANK] text`` (or JSON lines ``{"rank", "node", "line"}``), masked."""

    def __init__(self, masker: Masker, write, json_lines: bool, rank: int | None = None, nodes: list[str] | None = None):
        self.masker, self.write, self.json_lines, self.only, self.nodes = masker, write, json_lines, rank, nodes or []
        self._pending: list[bytes] = []  # the unfinished line, in pieces: joined once, when it ends (linear in its length)

    @property
    def pending(self) -> bytes:
        return b"".join(self._pending)

    @pending.setter
    def pending(self, value: bytes) -> None:
        self._pending = [value] if value else []

    def feed(self, chunk: bytes) -> None:
        if b"\n" not in chunk:
            if chunk:
                self._pending.append(chunk)
            return
        first, *lines, rest = chunk.split(b"\n")
        self._pending.append(first)
        self.line(b"".join(self._pending))
        for line in lines:
            self.line(line)
        self._pending = [rest] if rest else []

    def close(self) -> None:
        if self._pending:
            self.line(b"".join(self._pending))
            self._pending = []

    @staticmethod
    def split(raw: bytes) -> tuple[int | None, bytes]:
        m = _LABEL.match(raw)
        return (int(m.group(1)), m.group(2)) if m else (None, raw)

    def line(self, raw: bytes) -> None:
        rank, body = self.split(raw)
        if self.only is not None and rank != self.only:
            return
        text = self.masker.mask(body.decode("utf-8", "replace").rstrip("\r"))
        if self.json_lines:
            node = self.nodes[rank] if rank is not None and rank < len(self.nodes) else None
            self.write(json.dumps({"rank": rank, "node": node, "line": text}) + "\n")
        else:
            self.write(f"[{'job' if rank is None else rank}] {text}\n")


class Follower:
    """Reads what was added to a file since the last call (a local read: cheap to repeat)."""

    def __init__(self, path: Path, lines: RankLines, position: int = 0):
        self.path, self.lines, self.position = path, lines, position

    def pump(self) -> bool:
        try:
            with open(self.path, "rb") as fh:
                if os.fstat(fh.fileno()).st_size < self.position:
                    self.position = 0  # truncated (a requeued run without append): from the start
                fh.seek(self.position)
                chunk = fh.read(1 << 20)
        except FileNotFoundError:
            return False
        if chunk:
            self.position += len(chunk)
            self.lines.feed(chunk)
        return bool(chunk)

    def close(self) -> None:
        self.lines.close()


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


def output_file_of(job_id: str, output_dir: Path | None) -> Path | None:
    """The job's output file: Slurm's StdOut while it knows the job, else the runner's job directories."""
    state = job_state(job_id) if shutil.which("scontrol") else None
    stdout = (state.fields.get("StdOut") if state else None) or ""
    if stdout and "%" not in stdout and (Path(stdout).exists() or not state.done):
        return Path(stdout)  # a pending job's file does not exist yet: -f waits for it
    for base in filter(None, (output_dir, Path.cwd() / "primus-runs")):
        found = sorted(Path(base).glob(f"*/slurm-{job_id}.out"))
        if found:
            return found[-1]
    return None


def _tail(path: Path, lines: RankLines, count: int) -> int:
    """Feed the last ``count`` lines (of the selected rank) to ``lines``; the file position after them."""
    from collections import deque

    kept: deque = deque(maxlen=count)
    with open(path, "rb") as fh:
        for raw in fh:
            if raw.endswith(b"\n") and (lines.only is None or RankLines.split(raw[:-1])[0] == lines.only):
                kept.append(raw[:-1])
            elif not raw.endswith(b"\n"):
                lines.pending = raw  # a line still being written
        position = fh.tell()
    for raw in kept:
        lines.line(raw)
    return position


def job_logs(job: str, out: Output, follow: bool = False, node: str | None = None, tail: int | None = None,
             output_dir: str | None = None) -> int:
    """``logs JOB [-f] [--node N] [--tail N]``: the job's output from every node, rank by rank."""
    job_id = require_job_id(job)
    path = output_file_of(job_id, Path(output_dir).expanduser() if output_dir else None)
    if path is None:
        raise UsageError(f"no output file of job {job_id} found", "run logs from the directory you submitted from (or where slurm.output_dir points)")
    state = job_state(job_id) if shutil.which("scontrol") else None
    nodes = hostnames(state.fields["NodeList"]) if state and state.fields.get("NodeList") not in (None, "", "(null)") else []
    rank = None
    if node is not None:
        rank = int(node) if node.isdigit() else (nodes.index(node) if node in nodes else None)
        if rank is None:
            raise UsageError(f"--node {node}: not a rank or a node of job {job_id}" + (f" ({', '.join(nodes)})" if nodes else ""), "pass a rank (0, 1, …) or a node name")
    lines = RankLines(out.masker, lambda text: (sys.stdout.write(text), sys.stdout.flush()), json_lines=out.json_mode, rank=rank, nodes=nodes)
    if tail is not None and path.exists():
        if tail < 0:
            raise UsageError("--tail takes a number of lines (0 or more)")
        position = _tail(path, lines, tail) if tail else path.stat().st_size
        lines.pending = lines.pending if tail else b""
    else:
        position = 0
    follower = Follower(path, lines, position)
    while follower.pump():  # all of it, however long, not only the first read
        pass
    if follow:
        backoff, key, next_poll = Backoff(), None, time.monotonic() + POLL_FIRST
        while state is not None and not state.done:
            if time.monotonic() >= next_poll:
                state = job_state(job_id)
                new = (state.slurm_state, state.fields.get("Restarts")) if state else None
                next_poll = time.monotonic() + backoff.next(new != key)
                key = new
                if state is None or state.done:
                    break
            if not follower.pump():
                time.sleep(FILE_POLL)
        follower.pump()
    follower.close()
    return 0


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


def output_tail(path: Path, limit: int = TAIL_LIMIT) -> bytes:
    """The last ``limit`` bytes of the job's (masked) output, for the tracker's log upload."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - limit))
            return fh.read()
    except OSError:
        return b""


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
