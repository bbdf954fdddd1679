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
from dataclasses import dataclass, replace
from pathlib import Path

from runner import __version__
from runner.engines.slurm import values
from runner.engines.slurm.flags import SlurmFlags
from runner.errors import ConfigError, Problem
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
    # The cluster options (flags only: nodelist … signal), rendered as #SBATCH directives in FLAG_ORDER.
    cluster: SlurmFlags = SlurmFlags()
    # The launcher's slurm: keys as the launcher maps them to flags (`--key=value`), minus those
    # the command line sets: a flag beats its config key.
    config_flags: tuple[str, ...] = ()
    output: str | None = None  # -o/--output (flag or slurm.output): where the job's output goes
    error: str | None = None
    # GPUs: the count the user asked for on every node (--gpus-per-node, else --gpus N), which beats the
    # allocation; slurm.gpus_per_node, where Slurm allocates none; and what is asked of Slurm
    # (#SBATCH --gpus-per-node): the user's ask or a user's file, never a default.
    gpus_asked: int | None = None
    gpus_otherwise: int = 0
    gpus_directive: int | None = None

    @property
    def cli_args(self) -> tuple[str, ...]:
        """The user's own Slurm flags, as given: on sbatch's command line (they beat the directives)."""
        return self.cluster.args


FLAG_RULES = values.FLAG_RULES  # the cluster options' rules (runner.engines.slurm.values checks every value)
FLAG_ORDER = ("nodelist", "exclude", "qos", "reservation", "exclusive", "gres", "constraint", "mem", "cpus_per_task",
              "mail_type", "mail_user", "dependency", "requeue", "signal")


def _value_problems(settings: "SlurmSettings", flags: SlurmFlags, config) -> list[Problem]:
    """Every value of the job through the one check (``values``), each blamed on where it came
    from: the flag, or the config file's line."""
    given = {"nodes": settings.nodes, "gpus_per_node": settings.gpus_per_node, "partition": settings.partition,
             "time": settings.time, "account": settings.account}
    from_flag = {key: f"--{key.replace('_', '-')}" for key in given if getattr(flags, key) is not None}
    cluster = {key: getattr(settings.cluster, key) for key in (*values.FLAG_RULES, "mail_type", "cpus_per_task")}
    return values.problems({**given, **cluster}, {**from_flag, **{key: f"--{key.replace('_', '-')}" for key in cluster}},
                           lambda key: config.where(("slurm", key)))


def flag_directives(settings: "SlurmSettings") -> list[str]:
    """The cluster options as ``--option[=value]`` (already checked by ``settings_from``)."""
    rendered = []
    for key in FLAG_ORDER:
        value = getattr(settings.cluster, key)
        option = f"--{key.replace('_', '-')}"
        if value is True:
            rendered.append(option)
        elif value is not None and value is not False:
            rendered.append(f"{option}={value}")
    return rendered


def _gpus(config, flags: SlurmFlags) -> dict:
    """The GPU fields of ``SlurmSettings``: asked (a flag, ``container.gpus``), otherwise
    (``slurm.gpus_per_node``), and the directive, which a default never adds."""
    asked = flags.gpus_per_node if flags.gpus_per_node is not None else (_gpu_count(config) or None)
    otherwise = values.count(config.get("slurm", "gpus_per_node", default=0)) or 0
    from_file = otherwise if _set_by_users_file(config, ("slurm", "gpus_per_node")) else None
    directive = None if "gpus-per-node" in _given(flags.args) else (asked if asked is not None else from_file)
    return {"gpus_asked": asked, "gpus_otherwise": otherwise, "gpus_directive": directive or None}


def _set_by_users_file(config, path: tuple) -> bool:
    """Whether a file of the user's sets ``path``: not the built-in defaults, not the Primus
    checkout's own ``runner/.primus.yaml`` (the launcher's defaults)."""
    where = config.where(path) if path in config.lines else None
    if not where:
        return False
    file = where.rsplit(":", 1)[0]
    return any(loaded.path == file and loaded.kind != "checkout" for loaded in config.loaded)


def _gpu_count(config) -> int:
    """``--gpus N`` (``container.gpus``) under Slurm: N GPUs per node, asked of Slurm (above
    ``slurm.gpus_per_node``, below ``--gpus-per-node``)."""
    text = str(config.get("container", "gpus", default="") or "").strip()
    return int(text) if text.isdigit() else 0


def config_problems(config) -> list[Problem]:
    """The user's ``slurm:`` section checked as a launch checks it (``runner.engines.config_problems``)."""
    try:
        settings_from(config, SlurmFlags())
    except ConfigError as exc:
        return list(exc.problems)
    return []


def settings_from(config, flags: SlurmFlags) -> SlurmSettings:
    get = lambda key, default=None: config.get("slurm", key, default=default)  # noqa: E731
    pick = lambda flag, key, default=None: flag if flag is not None else get(key, default)  # noqa: E731
    given = _given(flags.args)
    unless_given = lambda flag, key: None if key in given else pick(flag, key)  # noqa: E731
    settings = SlurmSettings(
        nodes=values.count(pick(flags.nodes, "nodes", 1)),
        partition=unless_given(flags.partition, "partition"),
        time=None if unless_given(flags.time, "time") is None else str(pick(flags.time, "time")),
        account=unless_given(flags.account, "account"),
        gpus_per_node=values.count(flags.gpus_per_node if flags.gpus_per_node is not None else _gpu_count(config) or get("gpus_per_node", 0)),
        master_port=int(get("master_port", 1234)),
        output_dir=get("output_dir"),
        sbatch_args=tuple(str(a) for a in (get("sbatch_args", []) or [])),
        cluster=flags,
        config_flags=tuple(_config_flags(config, given)),
        output=flags.output or (None if "output" in given else _text(get("output"))),
        error=flags.error or (None if "error" in given else _text(get("error"))),
        **_gpus(config, flags),
    )
    problems = _value_problems(settings, flags, config)
    for flag in settings.config_flags:  # the launcher's slurm: keys, by the same rules as their flags
        key, eq, value = flag[2:].partition("=")
        name = key.replace("-", "_")
        if eq and values.checked(name):
            issue = values.problem(name, config.get("slurm", key), where=config.where(("slurm", key)), config_key=key)
            problems += [issue] if issue else []
        elif not _DIRECTIVE.match(flag):
            problems.append(Problem(f"slurm.{key}: one value in Slurm's own syntax (no spaces, quotes or '#')",
                                    where=config.where(("slurm", key))))
    problems += _text_problems(settings, flags, config)
    for index, arg in enumerate(settings.sbatch_args):
        where = config.where(("slurm", "sbatch_args", index))
        if re.match(r"^(--export\b|--get-user-env\b|--export-file\b)", arg.strip()):
            problems.append(
                Problem(f"slurm.sbatch_args may not set '{arg.split('=')[0]}'", where=where, hint="the runner exports exactly the allowlisted names; add names to container.options.env instead")
            )
    if problems:
        raise ConfigError(problems)
    return settings



def _text_problems(settings: SlurmSettings, flags: SlurmFlags, config) -> list[Problem]:
    """Every text setting that reaches the batch script or sbatch's command line, one line each
    (the batch script's own lines are checked again as a whole: ``values.script_text``)."""
    texts = [("slurm.output_dir", settings.output_dir, ("slurm", "output_dir")),
             *((f"slurm.sbatch_args[{i}]", arg, ("slurm", "sbatch_args", i)) for i, arg in enumerate(settings.sbatch_args)),
             *((f"--{key}" if getattr(flags, key) else f"slurm.{key}", getattr(settings, key), None if getattr(flags, key) else ("slurm", key))
               for key in ("output", "error")),
             *(("a Slurm flag", arg, None) for arg in (*flags.args, *flags.srun_args))]
    found = [values.control_problem(str(text), what, config.where(path) if path else None) for what, text, path in texts if text is not None]
    return [issue for issue in found if issue]


# The launcher's slurm: keys that are Slurm options (the others are its own: debug, dry_run,
# gpus_per_node, and the runner's master_port, output_dir …). The launcher writes each as its
# short flag where one exists; as directives, the long form says the same.
CONFIG_FLAG_KEYS = ("ntasks", "cpus-per-task", "job-name", "qos", "reservation", "constraint", "nodelist", "exclude",
                    "mem", "gres", "mail-type", "mail-user", "exclusive")
_DIRECTIVE = re.compile(r"^--[a-z-]+(=[A-Za-z0-9_.:+,=@/%\[\]&|!()*-]+)?$")
_SHORT = {"N": "nodes", "n": "ntasks", "c": "cpus-per-task", "t": "time", "o": "output", "e": "error", "J": "job-name",
          "p": "partition", "A": "account", "w": "nodelist", "x": "exclude", "C": "constraint", "q": "qos"}


def _given(args: tuple[str, ...]) -> set[str]:
    """The long names of the options the user's flags set (``-p X``, ``--partition=X``, ``-pX``)."""
    names = set()
    for token in args:
        if token.startswith("--"):
            names.add(token[2:].split("=")[0])
        elif token.startswith("-") and len(token) > 1:
            names.add(_SHORT.get(token[1], token[1]))
    return names


def _text(value) -> str | None:
    return None if value is None else str(value)


def _config_flags(config, given: set[str]) -> list[str]:
    flags = []
    for key in CONFIG_FLAG_KEYS:
        value = config.get("slurm", key)
        if value is None or value is False or key in given:
            continue
        flags.append(f"--{key}" if value is True else f"--{key}={value}")
    return flags


# --------------------------------------------------------------------------- plan file
def node_plan(plan: LaunchPlan, settings: SlurmSettings, kill_wait: int | None, cache: dict | None) -> LaunchPlan:
    """The plan each node's agent runs, complete on the submitting host: its stop timeout under Slurm's
    kill wait (the agent's cleanup ends before Slurm's SIGKILL), the node's own job cache mounted
    (``cache``: ``{"dir": template, "key": image key}``, a container's only), and ``pull=missing``:
    the agent has pulled under the job's policy (the plan file's ``pull``) before it starts the container."""
    stop_timeout = max(1.0, min(plan.stop_timeout, float(kill_wait) - 3)) if kill_wait else plan.stop_timeout
    node = replace(plan, stop_timeout=stop_timeout, pull="missing")
    if cache and settings.cluster.entry != "direct":
        from runner.runs import cache as job_cache

        node = job_cache.apply(node, job_cache.host_dir(str(cache["dir"]), plan.image))
    return node


def node_cache_dir(plan: LaunchPlan, settings: SlurmSettings, cache: dict | None) -> str | None:
    """The job cache directory each node makes on its own disk (the mount ``node_plan`` adds)."""
    if not cache or settings.cluster.entry == "direct":
        return None
    from runner.runs import cache as job_cache

    return str(job_cache.host_dir(str(cache["dir"]), plan.image))


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
        "devices": "allocation" if container and plan.gpu != "none" else "none",
        "cache_dir": cache_dir,
        "plan": record,
    }


def node_rule(plan, settings: SlurmSettings) -> dict:
    """The rule of the values each node's agent computes (``computed``): a container without GPUs has 0."""
    from runner.engines.slurm import computed

    no_gpus = plan.gpu == "none" and settings.cluster.entry != "direct"
    return computed.rule(settings.nodes, settings.master_port, 0 if no_gpus else settings.gpus_asked, settings.gpus_otherwise)


def job_names(plan, later: tuple[str, ...] = ()) -> list[str]:
    """The job variables the nodes are given: the forwarded ones, and ``later`` (the tracker run ids)."""
    names = [d.name for d in plan.forwarded if d.name not in COMPUTED]
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
        return self.plan.pull

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
                "nodes": self.settings.nodes, "node_command": list(self.node_command), "image": self.plan.image,
                "job_command": list(self.plan.command), "node_env": self.node_env(), "allocation": self.allocation,
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
    job_name = plan.name if _TOKEN.match(plan.name) else "primus"
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
    if settings.gpus_directive and not (plan.gpu == "none" and settings.cluster.entry != "direct"):
        lines.append(f"#SBATCH --gpus-per-node={settings.gpus_directive}")
    lines += [f"#SBATCH {d}" for d in flag_directives(settings)]
    lines += [f"#SBATCH {d}" for d in settings.config_flags]
    for key in ("output", "error"):  # from slurm.output / slurm.error; a -o/-e flag goes on sbatch's command line
        value = getattr(settings, key)
        if value and key not in _given(settings.cli_args) and _TOKEN.match(value.replace("%", "")):
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


