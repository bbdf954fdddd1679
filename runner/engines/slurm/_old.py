"""Slurm backend: ``submit``/``status``/``cancel`` and the per-node agent.

Why it is shaped this way:

* Values never touch a file or a command line. ``submit`` writes a plan file and
  a batch script that hold variable NAMES only, and runs ``sbatch`` with an
  explicit ``--export=NAME,…`` list: Slurm copies each value from sbatch's own
  environment to the nodes (never ``--export=ALL``), so a variable that is not
  on the list never reaches the job.
* ``srun`` starts this same runner (``python -m runner node-agent PLAN``) once
  per node. The agent rebuilds the plan from the file plus its environment,
  adds ``NNODES``/``NODE_RANK``/``MASTER_ADDR``/``MASTER_PORT``/``GPUS_PER_NODE``
  and hands it to the Docker backend (same stdin shim, masking and labels), so
  the job's output files only ever receive masked text.
* Containers must not outlive the job: SIGTERM from ``scancel`` reaches the
  agent, whose Docker run loop removes the container; when a step is killed
  hard the batch script runs a cleanup step on every node, and ``cancel``
  removes the job's containers by label after Slurm reports the job gone.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from runner import __version__
from runner.errors import ConfigError, EngineUnavailable, LeakFound, Problem, RuntimeFailure, UsageError
from runner.secrets import Masker, Secret
from runner.ui import Output

PLAN_FORMAT = "primus-runner/slurm-plan/1"
PLAN_FILE = "plan.json"
SCRIPT_FILE = "job.sbatch"
LABEL_SLURM_JOB = "io.primus-runner.slurm-job"
LABEL_NODE_RANK = "io.primus-runner.node-rank"
# Computed by the agent on each node; never taken from the submitting host.
COMPUTED = ("NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "GPUS_PER_NODE")
# What the agent itself needs on the node (to find srun/docker); never given to the container.
AGENT_NAMES = ("PATH",)
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
_TOKEN = re.compile(r"^[A-Za-z0-9_.:+,=@/-]+$")
_JOB_ID = re.compile(r"^\d+(_\d+)?$")


# --------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class SlurmSettings:
    """The ``slurm:`` config section with the command line on top."""

    nodes: int
    partition: str | None
    time: str | None
    account: str | None
    gpus_per_node: int
    master_port: int
    output_dir: str | None
    sbatch_args: tuple[str, ...]


def settings_from(config, args) -> SlurmSettings:
    get = lambda key, default=None: config.get("slurm", key, default=default)  # noqa: E731
    pick = lambda flag, key, default=None: flag if flag is not None else get(key, default)  # noqa: E731
    settings = SlurmSettings(
        nodes=int(pick(getattr(args, "nodes", None), "nodes", 1)),
        partition=pick(getattr(args, "partition", None), "partition"),
        time=None if pick(getattr(args, "time", None), "time") is None else str(pick(getattr(args, "time", None), "time")),
        account=pick(getattr(args, "account", None), "account"),
        gpus_per_node=int(pick(getattr(args, "gpus_per_node", None), "gpus_per_node", 0)),
        master_port=int(get("master_port", 1234)),
        output_dir=get("output_dir"),
        sbatch_args=tuple(str(a) for a in (get("sbatch_args", []) or [])),
    )
    problems = []
    if settings.nodes < 1:
        problems.append(Problem(f"--nodes {settings.nodes}: a job needs at least one node"))
    if settings.gpus_per_node < 0:
        problems.append(Problem(f"--gpus-per-node {settings.gpus_per_node} is negative"))
    for key in ("partition", "time", "account"):
        value = getattr(settings, key)
        if value is not None and not _TOKEN.match(value):
            problems.append(Problem(f"slurm {key} '{value}' has characters Slurm does not accept", where=config.where(("slurm", key))))
    for index, arg in enumerate(settings.sbatch_args):
        where = config.where(("slurm", "sbatch_args", index))
        if "\n" in arg or "\r" in arg:
            problems.append(Problem("slurm.sbatch_args entries must be one line each", where=where))
        if re.match(r"^(--export\b|--get-user-env\b|--export-file\b)", arg.strip()):
            problems.append(
                Problem(f"slurm.sbatch_args may not set '{arg.split('=')[0]}'", where=where, hint="the runner exports exactly the allowlisted names; add names to container.options.env instead")
            )
    if problems:
        raise ConfigError(problems)
    return settings


# --------------------------------------------------------------------------- plan file
def plan_document(plan, settings: SlurmSettings, job_dir: Path, kill_wait: int | None = None) -> dict:
    """The plan as JSON with variable NAMES only: the agent takes values from its environment."""
    env = [{"name": d.name, "secret": d.secret} for d in plan.forwarded if d.name not in COMPUTED]
    return {
        "format": PLAN_FORMAT,
        "runner_version": __version__,
        "job_dir": str(job_dir),
        "slurm": {"nodes": settings.nodes, "master_port": settings.master_port, "gpus_per_node": gpus_for(plan, settings), "kill_wait": kill_wait},
        "env": env,
        "plan": {
            "image": plan.image,
            "command": list(plan.command),
            "name": plan.name,
            "gpu": plan.gpu,
            "mounts": [{"source": m.source, "target": m.target, "mode": m.mode, "named_volume": m.named_volume} for m in plan.mounts],
            "devices": list(plan.devices),
            "gpu_request": plan.gpu_request,
            "cap_add": list(plan.cap_add),
            "group_add": list(plan.group_add),
            "security_opt": list(plan.security_opt),
            "ulimits": list(plan.ulimits),
            "privileged": plan.privileged,
            "ipc": plan.ipc,
            "network": plan.network,
            "user": plan.user,
            "workdir": plan.workdir,
            "shm_size": plan.shm_size,
            "memory": plan.memory,
            "cpus": plan.cpus,
            "secrets_via": plan.secrets_via,
            "stop_timeout": plan.stop_timeout,
            "labels": [list(pair) for pair in plan.labels],
            "trackers": {
                "framework": plan.trackers.framework,
                "enabled": list(plan.trackers.enabled),
                "settings": plan.trackers.settings,
                "overrides": list(plan.trackers.overrides),
            },
            "config_files": list(plan.config_files),
        },
    }


def plan_from_document(doc: dict, environ: dict[str, str]):
    """Rebuild the ``LaunchPlan`` on a node: names from the file, values from the environment.

    Returns (plan, masker, missing_names).
    """
    from runner.plan import LaunchPlan, Mount
    from runner.policy import EnvDecision
    from runner.tracker_config import TrackerPlan

    if doc.get("format") != PLAN_FORMAT:
        raise ConfigError(Problem(f"not a primus-runner Slurm plan file (format {doc.get('format')!r})"))
    p = doc["plan"]
    decisions, missing, secrets = [], [], []
    for entry in doc["env"]:
        name, secret = entry["name"], bool(entry["secret"])
        value = environ.get(name)
        if value is None:
            missing.append(name)
            continue
        if secret:
            value = Secret(value)
            secrets.append(value)
        decisions.append(EnvDecision(name, True, secret, "slurm", "env", value))
    t = p["trackers"]
    plan = LaunchPlan(
        image=p["image"],
        command=tuple(p["command"]),
        name=p["name"],
        gpu=p["gpu"],
        env=tuple(decisions),
        trackers=TrackerPlan(t["framework"], tuple(t["enabled"]), t["settings"], (), tuple(t["overrides"])),
        mounts=tuple(Mount(m["source"], m["target"], m["mode"], m["named_volume"]) for m in p["mounts"]),
        devices=tuple(p["devices"]),
        gpu_request=p["gpu_request"],
        cap_add=tuple(p["cap_add"]),
        group_add=tuple(p["group_add"]),
        security_opt=tuple(p["security_opt"]),
        ulimits=tuple(p["ulimits"]),
        privileged=p["privileged"],
        ipc=p["ipc"],
        network=p["network"],
        user=p["user"],
        workdir=p["workdir"],
        shm_size=p["shm_size"],
        memory=p["memory"],
        cpus=p["cpus"],
        secrets_via=p["secrets_via"],
        stop_timeout=float(p["stop_timeout"]),
        labels=tuple(tuple(pair) for pair in p["labels"]),
        config_files=tuple(p["config_files"]),
    )
    return plan, Masker(secrets), missing


def gpus_for(plan, settings: SlurmSettings) -> int:
    return 0 if plan.gpu == "none" else settings.gpus_per_node


def export_names(plan) -> list[str]:
    """Exactly the names Slurm copies to the nodes: the forwarded ones plus what the agent needs."""
    names = [d.name for d in plan.forwarded if d.name not in COMPUTED]
    return names + [n for n in AGENT_NAMES if n not in names]


# --------------------------------------------------------------------------- batch script
def agent_command() -> list[str]:
    """This very install on the nodes: the same interpreter, the runner as a module.

    ``-P`` keeps the job's working directory off ``sys.path`` (a user's own
    ``runner/`` package must not shadow ours).
    """
    cmd = [sys.executable]
    if sys.version_info >= (3, 11):
        cmd.append("-P")
    return cmd + ["-m", "runner"]


def _directive_value(value: str) -> str:
    return f'"{value}"' if re.search(r"\s", value) else value


def render_script(plan, settings: SlurmSettings, job_dir: Path) -> str:
    """The batch script: names only, no ``set -x``, nothing that depends on a value."""
    names = export_names(plan)
    plan_file = job_dir / PLAN_FILE
    agent = " ".join(shlex.quote(a) for a in agent_command())
    job_name = plan.name if _TOKEN.match(plan.name) else "primus"
    n = settings.nodes
    lines = [
        "#!/bin/bash",
        f"# primus-runner {__version__}: batch script for {job_name}. It holds variable NAMES only;",
        "# Slurm copies their values to the nodes from sbatch's environment (--export list below).",
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --nodes={n}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --output={_directive_value(str(job_dir / 'slurm-%j.out'))}",
        f"#SBATCH --chdir={_directive_value(os.getcwd())}",
    ]
    if settings.time:
        lines.append(f"#SBATCH --time={settings.time}")
    if settings.partition:
        lines.append(f"#SBATCH --partition={settings.partition}")
    if settings.account:
        lines.append(f"#SBATCH --account={settings.account}")
    gpus = gpus_for(plan, settings)
    if gpus:
        lines.append(f"#SBATCH --gpus-per-node={gpus}")
    lines.append(f"#SBATCH --export={','.join(names)}")
    lines += [f"#SBATCH {arg}" for arg in settings.sbatch_args]
    step = f"--nodes={n} --ntasks-per-node=1"
    lines += [
        "",
        "# One agent per node; it starts the container with the values from its environment.",
        f"srun {step} --kill-on-bad-exit=1 {agent} node-agent {shlex.quote(str(plan_file))}",
        "rc=$?",
        'if [ "$rc" -ne 0 ]; then',
        "    # srun reports the highest code, which may be a rank stopped because another failed (130/143):",
        "    # the job's code is the failing rank's own, which each agent wrote to the job directory.",
        f"    for f in {shlex.quote(str(job_dir))}/exit-\"$SLURM_JOB_ID\"-*; do",
        '        [ -f "$f" ] && read -r code < "$f" || continue',
        '        case "$code" in 0|130|143) ;; *) rc=$code; break ;; esac',
        "    done",
        "    # The step failed or was killed hard: no container of this job may survive on any node.",
        f"    srun {step} --kill-on-bad-exit=0 {agent} node-agent --cleanup \"$SLURM_JOB_ID\" {shlex.quote(str(plan_file))} || true",
        "fi",
        'exit "$rc"',
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- slurm calls
def _tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise EngineUnavailable(f"{name} not found: Slurm's client tools are not installed here", "install slurm-client or load your site's Slurm module")
    return path


# What Slurm's clients print when slurmctld is down or unreachable (not a refusal of the job).
_UNREACHABLE = re.compile(r"Unable to contact slurm controller|Socket timed out|Connection refused|Zero Bytes were transmitted")


def _run(cmd: list[str], timeout: float = 30, env: dict | None = None, umask: int = -1) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, umask=umask)
    except subprocess.TimeoutExpired as exc:
        raise EngineUnavailable(f"{cmd[0]} did not answer within {timeout:.0f} s", "check that slurmctld is running (scontrol ping)") from exc


def check_engine() -> list[str]:
    """Raise ``EngineUnavailable`` when Slurm cannot take a job; return warnings."""
    for tool in ("sbatch", "srun", "sinfo", "scontrol"):
        _tool(tool)
    probe = _run(["sinfo", "-h", "-o", "%P"], timeout=20)
    if probe.returncode != 0:
        raise EngineUnavailable(f"slurmctld does not answer: {probe.stderr.strip()}", "start slurmctld or check SLURM_CONF")
    warnings = []
    config = _run(["scontrol", "show", "config"], timeout=20)
    return warnings + accounting_warnings(config.stdout)


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


def _kill_wait() -> int | None:
    try:
        out = _run(["scontrol", "show", "config"], timeout=10).stdout
    except EngineUnavailable:
        return None
    m = re.search(r"^KillWait\s*=\s*(\d+)", out, re.M)
    return int(m.group(1)) if m else None


def parse_job(text: str) -> dict[str, str]:
    """``scontrol show job -o`` (one line of Key=Value) as a dict."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    keys = list(re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=", line))
    fields = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(line)
        fields[m.group(1)] = line[m.end():end].strip()
    return fields


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
    result = _run([_tool("scontrol"), "show", "job", "-o", job_id], timeout=20)
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


def _require_job_id(job: str) -> str:
    if not _JOB_ID.match(job):
        raise UsageError(f"'{job}' is not a Slurm job id", "pass the number submit printed, e.g. primus-runner status 1234")
    return job


# --------------------------------------------------------------------------- files
def _write_private(path: Path, text: str, masker: Masker) -> None:
    """Write a 0600 file, refusing if a secret value slipped into it (defence in depth)."""
    data = text.encode()
    if masker.contains_secret(data):
        raise ConfigError(Problem(f"refusing to write {path}: it would contain a secret value (is one in the command line?)"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _job_dir(settings: SlurmSettings, name: str, create: bool) -> Path:
    base = Path(settings.output_dir).expanduser() if settings.output_dir else Path.cwd() / "primus-runs"
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    path = (base / f"{stamp}-{safe}").absolute()
    if not create:
        return path
    base.mkdir(parents=True, exist_ok=True)
    for i in range(1000):
        candidate = path if i == 0 else path.with_name(f"{path.name}-{i}")
        try:
            candidate.mkdir(mode=0o700)
            return candidate
        except FileExistsError:
            continue
    raise RuntimeFailure(f"cannot create a job directory under {base}")


# --------------------------------------------------------------------------- submit
def cmd_submit(args, out: Output, flags) -> int:
    from runner.launch import prepare

    # The per-node variables are computed by the agent: planned as such, never taken from this host.
    per_node = [(name, "(per node)") for name in COMPUTED]
    prepared = prepare(out, args.config, args.env_file, args.command, flags, extra_env=per_node)
    plan = prepared.planned.require()
    settings = settings_from(prepared.config, args)
    if args.dry_run:
        script = render_script(plan, settings, _job_dir(settings, plan.name, create=False))
        if out.json_mode:
            out.json({"script": script, "export": export_names(plan)})
        else:
            out.result(script.rstrip("\n"))
        return 0

    if args.report:
        from runner import report as run_report

        run_report.check_path(args.report)  # fail before submitting, not after a long run
    began = time.time()
    sbatch = _tool("sbatch")
    _tool("srun")
    from runner import tracker_runs

    handshake = tracker_runs.begin(plan, out)  # tracker runs exist before the job: every rank logs to the same run
    plan = plan.with_env(handshake.env, "tracker run")
    job_dir = _job_dir(settings, plan.name, create=True)
    script_path = job_dir / SCRIPT_FILE
    script = render_script(plan, settings, job_dir)
    _write_private(job_dir / PLAN_FILE, json.dumps(plan_document(plan, settings, job_dir, _kill_wait()), indent=2), prepared.masker)
    _write_private(script_path, script, prepared.masker)

    # sbatch's own environment carries the values; the explicit list decides what travels.
    env = {k: v for k, v in os.environ.items() if k not in ("SBATCH_EXPORT", "SLURM_EXPORT_ENV", "SBATCH_EXPORT_FILE")}
    for decision in plan.forwarded:
        if decision.name in COMPUTED:
            continue
        value = decision.value
        env[decision.name] = value.reveal() if isinstance(value, Secret) else str(value)  # the one unwrap: into sbatch's env
    names = export_names(plan)
    result = _run([sbatch, "--parsable", f"--export={','.join(names)}", str(script_path)], timeout=60, env=env, umask=0o077)
    del env
    if result.returncode != 0:
        handshake.finish(3)
        reason = result.stderr.strip() or result.stdout.strip()
        if _UNREACHABLE.search(reason):  # nothing was submitted: exit 1 (engine unavailable), no job directory left
            shutil.rmtree(job_dir, ignore_errors=True)
            raise EngineUnavailable(f"slurmctld does not answer, the job was not submitted: {reason}", "start slurmctld or check SLURM_CONF (scontrol ping)")
        raise RuntimeFailure(f"sbatch refused the job: {reason}", f"the script is {script_path}; check partition, time and account")
    job_id = result.stdout.strip().split(";")[0]
    output_file = job_dir / f"slurm-{job_id}.out"
    if not args.wait:
        if out.json_mode:
            out.json({"job_id": job_id})
        else:
            out.result(job_id)
            out.info(f"submitted job {job_id} on {settings.nodes} node(s); output: {output_file}")
            out.info(f"follow it: primus-runner status {job_id}; stop it: primus-runner cancel {job_id}")
        return 0

    if not out.json_mode:
        out.info(f"submitted job {job_id} on {settings.nodes} node(s); output: {output_file}")
    from runner import ci

    try:
        with ci.group(f"job {job_id} output: {plan.name} on {settings.nodes} node(s)"):  # collapsible in CI logs
            final = wait_for(job_id, job_dir, out)
    except KeyboardInterrupt:
        out.warn(f"stopped following job {job_id}; it keeps running (primus-runner cancel {job_id} stops it)")
        return 130
    code = final_exit_code(final, job_dir, job_id)
    handshake.finish(code, _tail(output_file))
    report = {"job_id": job_id, "state": final.state if final else "unknown", "exit_code": code, "job_dir": str(job_dir),
              "script": str(script_path), "output": str(output_file), "nodes": settings.nodes}
    ci.write_summary(plan, code, handshake.links, prepared.masker)  # $GITHUB_STEP_SUMMARY: names and exit code
    if args.report:  # the schema'd run report (policies/report.schema.json), atomic, 0600, masked
        from runner import report as run_report

        run_report.write_report(
            args.report, plan=plan, started=began, ended=time.time(), exit_code=code, links=handshake.links,
            masker=prepared.masker, backend="slurm", job_id=job_id,
        )
    if out.json_mode:
        out.json({"job_id": job_id, "state": report["state"], "exit_code": code})
    if args.audit:
        from runner.audit import audit_paths

        leaks = audit_paths([job_dir] + ([Path(args.report)] if args.report else []), prepared.planned)
        if leaks:
            found = "; ".join(f"{leak.secret} at {leak.location}" for leak in leaks)
            raise LeakFound(f"secret values found in the job's files: {found}", "treat those secrets as exposed and rotate them")
        out.info(f"audit: no secret value in {job_dir}")
    return code


def wait_for(job_id: str, job_dir: Path, out: Output) -> JobState | None:
    """Follow the job to its end, streaming its (already masked) output, masked again."""
    output_file = job_dir / f"slurm-{job_id}.out"
    stream = out.masker.stream()
    sink = sys.stderr.buffer if out.json_mode else sys.stdout.buffer
    position, delay, state = 0, 0.1, None

    def pump() -> bool:
        nonlocal position
        try:
            with open(output_file, "rb") as fh:
                fh.seek(position)
                chunk = fh.read()
        except FileNotFoundError:
            return False
        if chunk:
            position += len(chunk)
            sink.write(stream.feed(chunk))
            sink.flush()
        return bool(chunk)

    while True:
        state = job_state(job_id)
        grew = pump()
        if state is None or state.done:
            break
        delay = 0.1 if grew else min(delay * 1.5, 1.0)
        time.sleep(delay)
    pump()
    sink.write(stream.flush())
    sink.flush()
    return state


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


def _tail(path: Path, limit: int = 64 << 20) -> bytes:
    """The last ``limit`` bytes of the job's (masked) output, for the tracker's log upload."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - limit))
            return fh.read()
    except OSError:
        return b""


def cmd_status(args, out: Output, _=None) -> int:
    job_id = _require_job_id(args.job)
    _tool("scontrol")
    state = job_state(job_id)
    if state is None:
        raise UsageError(f"Slurm does not know job {job_id}", "finished jobs are forgotten after MinJobAge unless the cluster keeps accounting (sacct)")
    if out.json_mode:
        out.json({"job_id": job_id, "state": state.state, "exit_code": state.exit_code})
    else:
        tail = f" (exit {state.exit_code})" if state.exit_code is not None else ""
        nodes = state.fields.get("NodeList")
        where = f" on {nodes}" if nodes and nodes != "(null)" else ""
        out.result(f"job {job_id}: {state.state}{tail}{where}")
    return 0


def cmd_cancel(args, out: Output, _=None) -> int:
    job_id = _require_job_id(args.job)
    state = job_state(job_id)
    if state is None:
        raise UsageError(f"Slurm does not know job {job_id}", "check the id with squeue")
    nodes = state.fields.get("NodeList", "")
    if not state.done:
        result = _run([_tool("scancel"), job_id], timeout=30)
        if result.returncode != 0:
            raise RuntimeFailure(f"scancel {job_id} failed: {result.stderr.strip()}")
        # Remove containers only once Slurm has stopped the agents, or one could start after us.
        kill_wait = _kill_wait() or 30
        deadline = time.monotonic() + kill_wait + 30
        delay = 0.1
        while time.monotonic() < deadline:
            state = job_state(job_id)
            if state is None or (state.done and state.slurm_state != "COMPLETING"):
                break
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)
    removed = remove_job_containers(job_id, nodes)
    out.info(f"job {job_id} cancelled; {removed} container(s) removed")
    return 0


def _remote_nodes(nodes: str) -> list[str]:
    """Nodes of the allocation whose slurmd runs on another host than this one."""
    if not nodes or nodes == "(null)":
        return []
    here = {socket.gethostname(), socket.getfqdn()}
    remote = []
    for node in hostnames(nodes):
        host = _node_field(node, "NodeHostName") or node
        if host not in here:
            remote.append(node)
    return remote


def remove_job_containers(job_id: str, nodes: str = "") -> int:
    """Remove the job's containers here, and on the other nodes through a cleanup step."""
    removed = 0
    try:
        from runner.engines import docker

        removed = docker.remove_containers({LABEL_SLURM_JOB: job_id})
    except EngineUnavailable:
        pass
    remote = _remote_nodes(nodes)
    if remote:
        cleanup_on_nodes(job_id, remote, wait=False)
    return removed


def cleanup_on_nodes(job_id: str, nodes: list[str], wait: bool = True, timeout: float = 300) -> int:
    """Run ``node-agent --cleanup JOB`` once on each node (after a cancel, ``srun --jobid`` is impossible).

    ``cancel`` does not wait for it: on a busy cluster the cleanup job may queue.
    """
    agent = " ".join(shlex.quote(a) for a in agent_command())
    wrap = f"srun --ntasks-per-node=1 {agent} node-agent --cleanup {job_id}"
    result = _run(
        [_tool("sbatch"), "--parsable", *(["--wait"] if wait else []), f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
         "--ntasks-per-node=1", "--time=5", "--job-name=primus-cleanup", "--export=PATH", "--output=/dev/null", f"--wrap={wrap}"],
        timeout=timeout,
    )
    return result.returncode


# --------------------------------------------------------------------------- node agent
def hostnames(nodelist: str) -> list[str]:
    if shutil.which("scontrol"):
        result = _run(["scontrol", "show", "hostnames", nodelist], timeout=20)
        if result.returncode == 0 and result.stdout.split():
            return result.stdout.split()
    from runner.nodelist import expand

    return expand(nodelist)


def _node_field(node: str, key: str) -> str | None:
    if not shutil.which("scontrol"):
        return None
    result = _run(["scontrol", "show", "node", "-o", node], timeout=20)
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
    addr = _node_field(first, "NodeAddr") or first
    try:
        socket.inet_aton(addr)
        return addr
    except OSError:
        pass
    try:
        return socket.getaddrinfo(addr, None, socket.AF_INET)[0][4][0]
    except OSError:
        return addr


def cmd_node_agent(args, out: Output, _=None) -> int:
    cleanup_job = getattr(args, "cleanup", None)
    if cleanup_job:
        from runner.engines import docker

        removed = docker.remove_containers({LABEL_SLURM_JOB: _require_job_id(str(cleanup_job))})
        if removed:
            out.info(f"node {os.environ.get('SLURMD_NODENAME', socket.gethostname())}: removed {removed} container(s) of job {cleanup_job}")
        return 0

    environ = dict(os.environ)
    job_id = environ.get("SLURM_JOB_ID")
    if not job_id:
        raise UsageError("node-agent runs inside a Slurm job step (started by srun from the batch script)", "use primus-runner submit")
    try:
        doc = json.loads(Path(args.plan_file).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(Problem(f"cannot read the plan file {args.plan_file}: {exc}", hint="the job directory must be on a file system every node sees"))
    plan, masker, missing = plan_from_document(doc, environ)
    out.use_masker(masker)
    secret_names = {e["name"] for e in doc["env"] if e["secret"]}
    lost = [n for n in missing if n in secret_names]
    if lost:
        raise ConfigError(Problem(f"these secrets did not reach node {environ.get('SLURMD_NODENAME', '?')}: {', '.join(lost)}", hint="Slurm must propagate the --export list; check sbatch's environment"))
    if missing:
        out.warn(f"not set on this node, not forwarded: {', '.join(missing)}")

    rank = environ.get("SLURM_NODEID", "0")
    slurm = doc["slurm"]
    computed = {
        "NNODES": environ.get("SLURM_NNODES", str(slurm["nodes"])),
        "NODE_RANK": rank,
        "MASTER_ADDR": master_address(environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST") or socket.gethostname()),
        "MASTER_PORT": str(slurm["master_port"]),
        "GPUS_PER_NODE": str(slurm["gpus_per_node"]),
    }
    name = f"primus-{job_id}-{rank}"
    labels = tuple((k, name if k.endswith(".job") else v) for k, v in plan.labels)
    stop_timeout = plan.stop_timeout
    if slurm.get("kill_wait"):  # finish our cleanup before Slurm's SIGKILL
        stop_timeout = max(1.0, min(stop_timeout, float(slurm["kill_wait"]) - 3))
    plan = replace(plan.with_env(computed, "slurm"), name=name, labels=labels, stop_timeout=stop_timeout)

    from runner.engines import docker

    code = docker.run_plan(plan, masker, out, extra_labels={LABEL_SLURM_JOB: job_id, LABEL_NODE_RANK: rank})
    job_dir = Path(doc["job_dir"])
    try:
        fd = os.open(job_dir / f"exit-{job_id}-{rank}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{code}\n")
    except OSError:
        pass
    return code
