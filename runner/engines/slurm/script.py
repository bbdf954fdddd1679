"""What ``submit`` writes: the Slurm settings, the plan file and the batch script.

Values never touch a file or a command line: the plan file and the batch script
hold variable NAMES only. The values reach the job through sbatch's stdin
(``--export-file=/dev/stdin``), never through sbatch's own environment, and each job
variable under the runner's prefix (``carried``): nothing the job is given can configure
sbatch, or srun and scontrol in the batch script. Pure: nothing here runs a Slurm command.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from runner import __version__
from runner.engines.slurm import values
from runner.engines.slurm.settings import SlurmSettings, flag_directives, given_keys
from runner.engines.slurm.node import COMPUTED, LABEL_NODE_RANK, LABEL_SLURM_JOB, MASK_PREFIX, PLAN_DIGEST, PLAN_FORMAT, CARRIED_PREFIX, carried  # noqa: F401  (shared with the node)
from runner.launch_plan import LaunchPlan

PLAN_FILE = "plan.json"
SCRIPT_FILE = "job.sbatch"
# What the agent itself needs on the node (to find srun/docker); never given to the container.
AGENT_NAMES = ("PATH", PLAN_DIGEST)
# The one name the job takes from sbatch's own environment (the user's shell): the batch script's PATH.
# Everything else the job is given comes from sbatch's stdin (``JOB_ENV_FILE``).
SBATCH_EXPORT = ("PATH",)
JOB_ENV_FILE = "/dev/stdin"  # sbatch reads the job's values from its stdin: NAME=value, each ended by NUL
_TOKEN = re.compile(r"^[A-Za-z0-9_.:+,=@/-]+$")


# --------------------------------------------------------------------------- plan file
def node_plan(plan: LaunchPlan, settings: SlurmSettings, kill_wait: int | None, cache: dict | None) -> LaunchPlan:
    """The plan each node's agent runs, complete on the submitting host: its stop timeout under Slurm's
    kill wait (the agent's cleanup ends before Slurm's SIGKILL), the node's own job cache mounted
    (``cache``: ``{"dir": template, "key": image key}``, a container's only), and ``pull=missing``:
    the agent has pulled under the job's policy (the plan file's ``pull``) before it starts the container."""
    stop_timeout = max(1.0, min(plan.job.stop_timeout, float(kill_wait) - 3)) if kill_wait else plan.job.stop_timeout
    node = replace(plan, job=replace(plan.job, stop_timeout=stop_timeout), container=replace(plan.container, pull="missing"))
    if cache and settings.cluster.entry != "direct":
        from runner.runs import cache as job_cache

        node = job_cache.apply(node, job_cache.host_dir(str(cache["dir"]), plan.container.image))
    return node


def node_cache_dir(plan: LaunchPlan, settings: SlurmSettings, cache: dict | None) -> str | None:
    """The job cache directory each node makes on its own disk (the mount ``node_plan`` adds)."""
    if not cache or settings.cluster.entry == "direct":
        return None
    from runner.runs import cache as job_cache

    return str(job_cache.host_dir(str(cache["dir"]), plan.container.image))


def plan_document(plan: LaunchPlan, settings: SlurmSettings, job_dir: Path, kill_wait: int | None = None, pull: str = "missing",
                  cache_dir: str | None = None, later: tuple[str, ...] = ()) -> dict:
    """The plan file: the node's plan's record (variable NAMES only, with ``later``: the tracker run ids
    the handshake gives), the per-node rules, the pull policy, the GPU rule and the job cache
    directory each node makes. Everything its agent does; it adds only the node's own facts."""
    record = plan.record()
    record["env"] = [e for e in record["env"] if e["name"] not in COMPUTED]
    known = {e["name"] for e in record["env"]}
    record["env"] += [{"name": n, "secret": False, "reason": "tracker run"} for n in later if n not in known and n not in COMPUTED]
    container = settings.cluster.entry != "direct"
    return {
        "format": PLAN_FORMAT,
        "runner_version": __version__,
        "job_dir": str(job_dir),
        "slurm": {**node_rule(plan, settings), "kill_wait": kill_wait},
        "pull": pull,
        "entry": settings.cluster.entry,  # direct: the direct launcher on each node's host, no container
        # The container's devices: the GPUs Slurm allocates to the step, mapped to this node's devices.
        "devices": "allocation" if container and plan.job.gpu != "none" else "none",
        "cache_dir": cache_dir,
        "plan": record,
    }


def node_rule(plan, settings: SlurmSettings) -> dict:
    """The rule of the values each node's agent computes (``computed``): a container without GPUs has 0."""
    from runner.engines.slurm import computed

    no_gpus = plan.job.gpu == "none" and settings.cluster.entry != "direct"
    return computed.rule(settings.nodes, settings.master_port, 0 if no_gpus else settings.gpus_asked, settings.gpus_otherwise)


def job_names(plan, later: tuple[str, ...] = ()) -> list[str]:
    """The job variables the nodes are given: the forwarded ones, and ``later`` (the tracker run ids)."""
    names = [d.name for d in plan.job.forwarded if d.name not in COMPUTED]
    return names + [n for n in later if n not in names]


def export_names(plan, later: tuple[str, ...] = (), agent_env: tuple[str, ...] = ()) -> list[str]:
    """Exactly the names Slurm copies to the nodes: the job variables (``carried``) plus what the agent needs.

    ``agent_env``: names for the agent only (the registry login it pulls with); the
    container's environment is built from the plan file's names, so they never reach it.
    """
    return [carried(n) for n in job_names(plan, later)] + list(dict.fromkeys((*AGENT_NAMES, *agent_env)))


@dataclass(frozen=True)
class SlurmRequest:
    """Everything ``sbatch`` is given, complete before anything exists: its argument list, the
    batch script (names only) at its path in the job directory, the exact ``--export`` names
    and the container command each node's agent runs. ``launch`` writes and submits exactly
    this; the dry run renders it."""

    plan: LaunchPlan
    settings: SlurmSettings
    job_dir: Path
    script: str
    export: tuple[str, ...]
    agent_env: tuple[str, ...] = ()  # exported for the agent only (DOCKER_LOGIN_*), never the container's
    # Their values, as the request's lookup found them (the environment, then the env file; the login
    # key a Secret): sbatch's stdin only, never rendered, so launch reads nothing but the request.
    agent_values: dict = field(default_factory=dict, repr=False, compare=False)
    node_cache: dict | None = None  # the job cache each node mounts from its own disk
    node_command: tuple[str, ...] = ()  # each node's container, as `docker run …` (rank and job id per node)
    # The Slurm allocation this process runs in (SLURM_JOB_ID, as after salloc), and whether the job is a
    # step in it (the launcher's `slurm srun` there: srun, not a new job) rather than a job of its own.
    allocation: str | None = None
    as_step: bool = False
    node_plan: LaunchPlan | None = None  # the plan each node's agent runs (``node_plan``), its values the job's
    plan_file: str = ""  # the plan file's text, exactly as written to the job directory
    run_id: str | None = None  # the run's id: in the job directory's path (the one id a dry run draws)

    @property
    def pull(self) -> str:
        return self.plan.container.pull

    def command(self, sbatch: str = "sbatch") -> list[str]:
        """sbatch's argument list: the user's Slurm flags as given, after the runner's own (so they win);
        for a step in the allocation, the batch script run here (its srun starts the step)."""
        if self.as_step:
            return [values.ScriptValue(arg, "the step's command line") for arg in ("bash", str(self.job_dir / SCRIPT_FILE))]
        argv = [sbatch, "--parsable", f"--export={','.join(SBATCH_EXPORT)}", f"--export-file={JOB_ENV_FILE}", *self.settings.cli_args,
                str(self.job_dir / SCRIPT_FILE)]
        return [values.ScriptValue(arg, "sbatch's command line") for arg in argv]

    def with_run_env(self, pairs: dict[str, str]) -> "SlurmRequest":
        """The tracker handshake's values (run ids) by name: their names are in ``export`` already
        (``run_env_names``), so the script stays as it is; the values travel on sbatch's stdin."""
        from dataclasses import replace

        if not pairs:
            return self
        node = self.node_plan.with_env(pairs, "tracker run") if self.node_plan else None
        return replace(self, plan=self.plan.with_env(pairs, "tracker run"), node_plan=node)

    @property
    def job_env(self) -> list[str]:
        """The names each node's job is given (their values from sbatch's stdin), besides the computed ones."""
        return [n[len(CARRIED_PREFIX):] for n in self.export if n.startswith(CARRIED_PREFIX)]

    def node_env(self) -> dict:
        """Each node's environment as the dry run shows it: the names it is given, the values its agent computes."""
        from runner.engines.slurm import computed

        return {"names": self.job_env, "computed": computed.shown(node_rule(self.plan, self.settings))}

    def to_dict(self) -> dict:
        return {"engine": "slurm", "command": self.command(), "sbatch": self.command(), "script": self.script,
                "script_path": str(self.job_dir / SCRIPT_FILE), "job_dir": str(self.job_dir), "export": list(self.export),
                "nodes": self.settings.nodes, "node_command": list(self.node_command), "image": self.plan.container.image,
                "job_command": list(self.plan.job.command), "node_env": self.node_env(), "allocation": self.allocation,
                "as_step": self.as_step, "plan_file": self.plan_file, "plan_file_path": str(self.job_dir / PLAN_FILE),
                "ids": {"run_id": self.run_id}}

    def render(self) -> str:
        nodes = self.settings.nodes
        env = self.node_env()
        how = (f"# a step in Slurm allocation {self.allocation} (SLURM_JOB_ID), as srun runs one (from {os.getcwd()}):"
               if self.as_step else f"# sbatch (from {os.getcwd()}):")
        return "\n".join([
            how,
            " ".join(shlex.quote(a) for a in self.command()),
            "",
            f"# the batch script, {self.job_dir / SCRIPT_FILE}:",
            self.script.rstrip("\n"),
            "",
            f"# the plan file every node's agent runs, {self.job_dir / PLAN_FILE} (shown as comments):",
            *(f"#   {line}" for line in self.plan_file.splitlines()),
            "",
            (f"# on each of the {nodes} node(s), the node agent runs the direct launcher on the host (no container):"
             if self.settings.cluster.entry == "direct" else
             f"# on each of the {nodes} node(s), the node agent runs this container (<job> and <rank> per node):"),
            " ".join(shlex.quote(a) for a in self.node_command),
            "",
            f"# each node's environment: {', '.join(env['names']) or '(no forwarded name)'}, and computed by its agent:",
            *(f"#   {name}={value}" for name, value in env["computed"].items()),
        ])


# --------------------------------------------------------------------------- batch script
def agent_command() -> list[str]:
    """This very install on the nodes: the same interpreter, the agent's own entry file
    (``entry``: no ``site``, no command-line parser to load on every node), and the
    directories this process imports from.

    ``-P`` keeps the job's working directory off ``sys.path`` (a user's own
    ``runner/`` package must not shadow ours).
    """
    cmd = [sys.executable, "-S"]
    if sys.version_info >= (3, 11):
        cmd.append("-P")
    return cmd + [str(Path(__file__).resolve().with_name("entry.py")), "--path", agent_path()]


def agent_path() -> str:
    """Where the agent's imports come from, as ``site`` found them for this process: this package's
    root first, then this interpreter's install directories (its site-packages, the user's)."""
    root = str(Path(__file__).resolve().parents[3])  # runner/engines/slurm/script.py -> the directory holding runner/
    installs = [p for p in sys.path if p.rstrip(os.sep).endswith(("site-packages", "dist-packages"))]
    return os.pathsep.join(dict.fromkeys([root, *installs]))


def _directive_value(value: str) -> str:
    return f'"{value}"' if re.search(r"\s", value) else value


def render_script(plan: LaunchPlan, settings: SlurmSettings, job_dir: Path, later: tuple[str, ...] = (), agent_env: tuple[str, ...] = (),
                  as_step: bool = False) -> str:
    """The batch script: names only, no ``set -x``, nothing that depends on a value. ``as_step``: run
    here inside an allocation, so the user's Slurm flags go to the step's srun (as the launcher's srun takes them)."""
    names = export_names(plan, later, agent_env)
    srun_args = settings.cluster.srun_args + (settings.cli_args if as_step else ())
    return values.script_text(_directives(plan, settings, job_dir) + _steps(settings.nodes, job_dir, names, srun_args))


def _directives(plan: LaunchPlan, settings: SlurmSettings, job_dir: Path) -> list[str]:
    """The script's header: every ``#SBATCH`` line; ``--export`` takes only PATH from sbatch's environment."""
    job_name = plan.job.name if _TOKEN.match(plan.job.name) else "primus"
    n = settings.nodes
    lines = [
        "#!/bin/bash",
        f"# primus-runner {__version__}: batch script for {job_name}. It holds variable NAMES only;",
        "# Slurm gives the job their values from sbatch's stdin, each job variable as PRIMUS_RUNNER_ENV_<NAME>.",
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --nodes={n}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --output={_directive_value(str(job_dir / 'slurm-%j.out'))}",  # -o on sbatch's command line beats it
        "#SBATCH --open-mode=append",  # a requeued job's next run adds to the same file
        f"#SBATCH --chdir={_directive_value(os.getcwd())}",
    ]
    if settings.time:
        lines.append(f"#SBATCH --time={settings.time}")
    if settings.partition:
        lines.append(f"#SBATCH --partition={settings.partition}")
    if settings.account:
        lines.append(f"#SBATCH --account={settings.account}")
    if settings.gpus_directive and not (plan.job.gpu == "none" and settings.cluster.entry != "direct"):
        lines.append(f"#SBATCH --gpus-per-node={settings.gpus_directive}")
    lines += [f"#SBATCH {d}" for d in flag_directives(settings)]
    lines += [f"#SBATCH {d}" for d in settings.config_flags]
    for key in ("output", "error"):  # from slurm.output / slurm.error; a -o/-e flag goes on sbatch's command line
        value = getattr(settings, key)
        if value and key not in given_keys(settings.cli_args) and _TOKEN.match(value.replace("%", "")):
            lines.append(f"#SBATCH --{key}={value}")
    lines.append(f"#SBATCH --export={','.join(SBATCH_EXPORT)}")
    lines += [f"#SBATCH {arg}" for arg in settings.sbatch_args]
    return lines


def _steps(n: int, job_dir: Path, names: list[str], srun_args: tuple[str, ...] = ()) -> list[str]:
    """One agent per node; on failure, the failing rank's code and a cleanup step on every node."""
    plan_file = job_dir / PLAN_FILE
    agent = " ".join(shlex.quote(a) for a in agent_command())
    step = f"--nodes={n} --ntasks-per-node=1"
    user = "".join(f" {shlex.quote(a)}" for a in srun_args)  # the user's srun-only flags (--unbuffered …)
    exits = f"{shlex.quote(str(job_dir))}/exit-\"$SLURM_JOB_ID\""
    return [
        "",
        "# One agent per node; it starts the container with the values from its environment.",
        "# MASTER_ADDR once for the whole job (the first node's NodeAddr): two queries to slurmctld, not two per node.",
        'first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" 2>/dev/null | head -n 1)',
        "PRIMUS_MASTER_NODEADDR=$(scontrol show node -o \"$first\" 2>/dev/null | sed -n 's/.* NodeAddr=\\([^ ]*\\).*/\\1/p')",
        "export PRIMUS_MASTER_NODEADDR",
        "# --label: every line of the job's output starts with its rank (\"1: ...\"), which `logs` shows.",
        f"srun {step} --kill-on-bad-exit=1 --label{user} --export={','.join(names)},PRIMUS_MASTER_NODEADDR {agent} node-agent {shlex.quote(str(plan_file))}",
        "rc=$?",
        'if [ "$rc" -ne 0 ]; then',
        "    # An agent that wrote no exit code was killed, or its node failed: name the node.",
        "    rank=0",
        '    for node in $(scontrol show hostnames "$SLURM_JOB_NODELIST" 2>/dev/null); do',
        f'        [ -f {exits}-"$rank" ] || echo "primus-runner: node $node (rank $rank): its node agent ended without an exit code (killed, or the node failed)" >&2',
        "        rank=$((rank + 1))",
        "    done",
        "    # srun reports the highest code, which may be a rank stopped because another failed (130/143):",
        "    # the job's code is the failing rank's own, which each agent wrote to the job directory.",
        f"    for f in {shlex.quote(str(job_dir))}/exit-\"$SLURM_JOB_ID\"-*; do",
        '        [ -f "$f" ] && read -r code < "$f" || continue',
        '        case "$code" in 0|130|143) ;; *) rc=$code; break ;; esac',
        "    done",
        "    # The step failed or was killed hard: no container of this job may survive on any node.",
        f"    srun {step} --kill-on-bad-exit=0 --label {agent} node-agent --cleanup \"$SLURM_JOB_ID\" {shlex.quote(str(plan_file))} || true",
        "fi",
        'exit "$rc"',
        "",
    ]


