"""The Slurm engine's own command-line flags: their declarations as data (``OPTIONS``), the typed
``SlurmFlags`` they become (``cli_flags``, from a plain mapping), and where a launch finds them (``of``).

The CLI asks each registered engine for its flags (``runner.cli``), so no generic module
names a Slurm option. Light on purpose: ``script`` and the CLI import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from runner.engines.base import Option

NAME = "slurm"  # the engine's registry name: its entry in a launch's engine_flags


@dataclass(frozen=True)
class SlurmFlags:
    """``submit``'s Slurm options; ``None`` means "from the config's slurm: section"."""

    nodes: int | None = None
    partition: str | None = None
    time: str | None = None
    account: str | None = None
    gpus_per_node: int | None = None
    output: str | None = None  # slurm mode's -o/--output: where the job's output file goes
    error: str | None = None  # slurm mode's -e/--error: where the job's stderr goes
    # slurm mode: the user's flags before the first --, exactly as given (sbatch's argv), and the
    # srun-only ones among them (on the step's srun line)
    args: tuple[str, ...] = ()
    srun_args: tuple[str, ...] = ()
    entry: str = "container"  # slurm mode: what each node runs, a container or the direct launcher on the host
    launcher: str | None = None  # slurm mode: "srun" or "sbatch" (None: submit); srun inside an allocation runs a step in it
    # What shared clusters ask for; each is checked in runner.engines.slurm.script (one token, no directive).
    nodelist: str | None = None
    exclude: str | None = None
    qos: str | None = None
    reservation: str | None = None
    exclusive: bool = False
    gres: str | None = None
    constraint: str | None = None
    mem: str | None = None
    cpus_per_task: int | None = None
    mail_type: str | None = None
    mail_user: str | None = None
    dependency: str | None = None
    requeue: bool = False
    signal: str | None = None


def of(options) -> SlurmFlags:
    """The Slurm flags a launch (``RunOptions``, ``ModeOptions``) carries; none given: the defaults."""
    return options.engine_flags_for(NAME) or SlurmFlags()


_LAUNCH = ("submit", "up", "plan")  # up and plan: only with --engine slurm (runner.cli asks the launching engine)
_LAUNCHER = ("slurm srun", "slurm sbatch")  # the launcher's slurm subcommands (primus-cli slurm srun|sbatch)
_SHORT = ("submit", *_LAUNCHER)  # up's -t is --tty: up and plan take the long forms only

_JOB = "Slurm job options (as sbatch spells them)"
_CLUSTER_GROUP = "Slurm options (as sbatch takes them; each value is checked before anything is submitted)"


def _job(flags: tuple[str, ...], help: str, **kw) -> Option:
    return Option(flags, help, _LAUNCH + _LAUNCHER, group=_JOB, short_on=_SHORT, **kw)


def _cluster(flag: str, metavar: str | None, help: str, **kw) -> Option:
    return Option((flag,), help, _LAUNCH + _LAUNCHER, metavar=metavar, group=_CLUSTER_GROUP, **kw)


# The Slurm engine's options, as data (TorchX runopts): runner.cli alone makes argparse of them.
OPTIONS: tuple[Option, ...] = (
    _job(("-N", "--nodes"), "number of nodes (default: slurm.nodes, else 1)", type="int", metavar="N"),
    _job(("-p", "--partition"), "partition (default: slurm.partition, else the cluster's default)", metavar="P"),
    _job(("-t", "--time"), "time limit, e.g. 4:00:00 (default: slurm.time)", metavar="T"),
    _job(("-A", "--account"), "account charged (default: slurm.account)", metavar="A"),
    _job(("--gpus-per-node",), "GPUs per node (default: slurm.gpus_per_node)", type="int", metavar="G"),
    Option(("-o", "--output"), "the job's output file", _LAUNCHER, metavar="FILE", group=_JOB, short_on=_LAUNCHER),
    _cluster("--nodelist", "NODES", "run on these nodes, e.g. n[1-4]"), _cluster("--exclude", "NODES", "never on these nodes"),
    _cluster("--qos", "QOS", "quality of service"), _cluster("--reservation", "NAME", "run in this reservation"),
    _cluster("--gres", "LIST", "generic resources per node, e.g. gpu:8"),
    _cluster("--constraint", "LIST", "node features, e.g. mi300x&ib"), _cluster("--mem", "SIZE", "memory per node, e.g. 512G"),
    _cluster("--mail-type", "TYPES", "when Slurm mails you, e.g. END,FAIL"), _cluster("--mail-user", "USER", "who Slurm mails"),
    _cluster("--dependency", "LIST", "start after other jobs, e.g. afterok:1234"),
    _cluster("--signal", "[B:]SIG[@S]", "signal the job S seconds before its time limit"),
    _cluster("--cpus-per-task", "N", "CPUs per task", type="int"),
    _cluster("--exclusive", None, "the nodes are not shared with other jobs", switch=True),
    _cluster("--requeue", None, "Slurm may requeue the job (preemption, node failure)", switch=True),
    Option(("-w",), "same as --nodelist", _LAUNCHER, dest="nodelist", metavar="NODES", short_on=_LAUNCHER),
    Option(("-x",), "same as --exclude", _LAUNCHER, dest="exclude", metavar="NODES", short_on=_LAUNCHER),
)


def options() -> tuple[Option, ...]:
    """The options above (what ``SlurmEngine.options`` answers)."""
    return OPTIONS


_CLUSTER = ("nodelist", "exclude", "qos", "reservation", "exclusive", "gres", "constraint", "mem", "cpus_per_task",
            "mail_type", "mail_user", "dependency", "requeue", "signal")


def cli_flags(values: Mapping[str, Any], command: str) -> SlurmFlags | None:
    """``submit``'s (or ``up``/``plan --engine slurm``'s) parsed Slurm options (option dest -> value, a plain
    mapping) as ``SlurmFlags`` (the launcher's modes parse their own tokens: ``runner.cli.launcher_translate``);
    ``None`` for a command that has none."""
    if command not in _LAUNCH:
        return None
    return SlurmFlags(values["nodes"], values["partition"], values["time"], values["account"], values["gpus_per_node"],
                      **{n: values[n] for n in _CLUSTER})
