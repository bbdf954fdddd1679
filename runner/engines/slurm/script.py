"""What ``submit`` writes: the Slurm settings, the plan file and the batch script.

Values never touch a file or a command line: the plan file and the batch script
hold variable NAMES only, and ``sbatch`` runs with an explicit ``--export=NAME,…``
list, so Slurm copies each value from sbatch's own environment to the nodes
(never ``--export=ALL``). Pure: nothing here runs a Slurm command.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from runner import __version__
from runner.errors import ConfigError, Problem
from runner.options import SlurmFlags
from runner.plan import LaunchPlan

PLAN_FORMAT = "primus-runner/slurm-plan/1"
PLAN_FILE = "plan.json"
SCRIPT_FILE = "job.sbatch"
LABEL_SLURM_JOB = "io.primus-runner.slurm-job"
LABEL_NODE_RANK = "io.primus-runner.node-rank"
# Computed by the agent on each node; never taken from the submitting host.
COMPUTED = ("NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "GPUS_PER_NODE")
# What the agent itself needs on the node (to find srun/docker); never given to the container.
AGENT_NAMES = ("PATH",)
_TOKEN = re.compile(r"^[A-Za-z0-9_.:+,=@/-]+$")


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


def settings_from(config, flags: SlurmFlags) -> SlurmSettings:
    get = lambda key, default=None: config.get("slurm", key, default=default)  # noqa: E731
    pick = lambda flag, key, default=None: flag if flag is not None else get(key, default)  # noqa: E731
    settings = SlurmSettings(
        nodes=int(pick(flags.nodes, "nodes", 1)),
        partition=pick(flags.partition, "partition"),
        time=None if pick(flags.time, "time") is None else str(pick(flags.time, "time")),
        account=pick(flags.account, "account"),
        gpus_per_node=int(pick(flags.gpus_per_node, "gpus_per_node", 0)),
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
def plan_document(plan: LaunchPlan, settings: SlurmSettings, job_dir: Path, kill_wait: int | None = None) -> dict:
    """The plan file: the plan's record (variable NAMES only) and the per-node settings."""
    record = plan.record()
    record["env"] = [e for e in record["env"] if e["name"] not in COMPUTED]
    return {
        "format": PLAN_FORMAT,
        "runner_version": __version__,
        "job_dir": str(job_dir),
        "slurm": {"nodes": settings.nodes, "master_port": settings.master_port, "gpus_per_node": gpus_for(plan, settings), "kill_wait": kill_wait},
        "plan": record,
    }


def gpus_for(plan, settings: SlurmSettings) -> int:
    return 0 if plan.gpu == "none" else settings.gpus_per_node


def export_names(plan) -> list[str]:
    """Exactly the names Slurm copies to the nodes: the forwarded ones plus what the agent needs."""
    names = [d.name for d in plan.forwarded if d.name not in COMPUTED]
    return names + [n for n in AGENT_NAMES if n not in names]



@dataclass(frozen=True)
class SlurmRequest:
    """The batch script and the exact names ``sbatch --export`` carries."""

    plan: LaunchPlan
    settings: SlurmSettings
    job_dir: Path
    script: str
    export: tuple[str, ...]

    def command(self, sbatch: str = "sbatch") -> list[str]:
        return [sbatch, "--parsable", f"--export={','.join(self.export)}", str(self.job_dir / SCRIPT_FILE)]

    def to_dict(self) -> dict:
        return {"script": self.script, "export": list(self.export), "command": self.command()}

    def render(self) -> str:
        return self.script.rstrip("\n")


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


def render_script(plan: LaunchPlan, settings: SlurmSettings, job_dir: Path) -> str:
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


