"""Submitting a request: the job's files written, its values on sbatch's stdin (or a step of the
current allocation), where its output goes."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from pathlib import Path

from runner.engines.slurm.controller import UNREACHABLE, tool
from runner.engines.slurm.job_directory import write_private
from runner.engines.slurm.job_output import Follower, RankLines
from runner.engines.slurm.job_state import FILE_POLL
from runner.engines.slurm.node import carried, plan_digest, run as _run
from runner.engines.slurm.script import COMPUTED, PLAN_DIGEST, PLAN_FILE, SCRIPT_FILE, SlurmRequest, agent_command
from runner.engines.slurm.values import ScriptValue
from runner.errors import ConfigError, EngineUnavailable, Problem, RuntimeFailure
from runner.secrets import Masker, Secret
from runner.secrets.argv import refuse_secret_argv
from runner.ui import Output
from runner.ui.exits import interrupt_means

STEP_STOP_LIMIT = 120.0  # seconds a stopped step's srun, then its cleanup step, may take


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
        if UNREACHABLE.search(reason):  # nothing was submitted: exit 1 (engine unavailable), no job directory left
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

    pairs = [(carried(d.name), text(d.value)) for d in request.node_plan.job.forwarded if d.name not in COMPUTED]
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


def follow_step(step, request: SlurmRequest, out: Output) -> int:
    """The step's output (rank-prefixed, masked again) until it ends; its exit code. Stopped with the
    runner (Ctrl-C, a failure): its agents are killed, so their containers are removed after it."""
    import signal

    output = request.job_dir / f"slurm-{request.allocation}.out"
    follower = Follower(output, RankLines(out.masker, lambda text: (sys.stdout.write(text), sys.stdout.flush()), json_lines=False))
    with interrupt_means("interrupted: the step was stopped (its agents remove their containers)"):
        try:
            while step.poll() is None:
                if not follower.pump():
                    time.sleep(FILE_POLL)
        finally:
            if step.poll() is None:  # Ctrl-C (or the runner failed): the step must not outlive it
                os.killpg(step.pid, signal.SIGTERM)  # the script and its srun, which kills the agents (SIGKILL)
                step.wait()
                _until_gone(step.pid, STEP_STOP_LIMIT)
                cleanup_step(request)
            while follower.pump():
                pass
            follower.close()
    return step.returncode


def cleanup_step(request: SlurmRequest) -> None:
    """``node-agent --cleanup`` on each node of the allocation, as the batch script runs it when its
    step fails: nothing of the stopped step's survives on any node (with PATH alone, as ``cancel``'s)."""
    argv = [tool("srun"), f"--nodes={request.settings.nodes}", "--ntasks-per-node=1", "--kill-on-bad-exit=0", "--export=PATH",
            *agent_command(), "node-agent", "--cleanup", request.allocation, str(request.job_dir / PLAN_FILE)]
    _run([ScriptValue(arg, "the cleanup step's command line") for arg in argv], timeout=STEP_STOP_LIMIT)


def _until_gone(group: int, limit: float) -> None:
    """Wait (at most ``limit`` seconds) until no process of the stopped step's group is left (its
    srun ends after its agents), so the cleanup step finds the nodes free."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(FILE_POLL)


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
    return request.plan.job.name if re.match(r"^[A-Za-z0-9_.:+,=@/-]+$", request.plan.job.name) else "primus"


def expand_filename(pattern: str, job_id: str, name: str) -> str:
    """Slurm's filename pattern for a batch job's output (``%j``, ``%x``, ``%u``, ``%A``, ``%%`` …)."""
    import getpass

    values = {"j": job_id, "J": job_id, "A": job_id, "a": "4294967294", "x": name, "u": getpass.getuser(), "%": "%", "s": "batch",
              "t": "0", "n": "0", "N": (os.environ.get("SLURMD_NODENAME") or "")}
    return re.sub(r"%(\d*)([jJAaxusntN%])", lambda m: values[m.group(2)].zfill(int(m.group(1) or 0)), pattern)
