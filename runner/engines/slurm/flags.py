"""The Slurm engine's own command-line flags: their declarations (``cli_options``), the typed
``SlurmFlags`` they become (``cli_flags``), and where a launch finds them (``of``).

The CLI asks each registered engine for its flags (``runner.cli``), so no generic module
names a Slurm option. Light on purpose: ``script`` and the CLI import it.
"""

from __future__ import annotations

from runner.records import dataclass

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


def cli_options(parser, command: str) -> None:
    """Declare the Slurm flags on ``command``'s parser: ``submit``, ``up``/``plan --engine slurm`` (its
    ``submit --wait`` and ``submit --dry-run``) and the launcher's slurm subcommands."""
    if command in _LAUNCH:
        # up's -t is --tty: up and plan take the long forms only, the same on either command
        _job_options(parser.add_argument_group("Slurm job options (as sbatch spells them)"), short=command == "submit")
        _cluster_options(parser)
    elif command in _LAUNCHER:
        g = parser.add_argument_group("Slurm flags (each value is checked; nothing may set --export)")
        _job_options(g)
        g.add_argument("-o", "--output", metavar="FILE", help="the job's output file")
        _cluster_options(parser)
        parser.add_argument("-w", dest="nodelist", metavar="NODES", help="same as --nodelist")
        parser.add_argument("-x", dest="exclude", metavar="NODES", help="same as --exclude")


_CLUSTER = ("nodelist", "exclude", "qos", "reservation", "exclusive", "gres", "constraint", "mem", "cpus_per_task",
            "mail_type", "mail_user", "dependency", "requeue", "signal")


def cli_flags(args, command: str) -> SlurmFlags | None:
    """``submit``'s (or ``up``/``plan --engine slurm``'s) parsed Slurm flags as ``SlurmFlags`` (the launcher's
    modes parse their own tokens: ``runner.cli.launcher_translate``); ``None`` for a command that has none."""
    if command not in _LAUNCH:
        return None
    return SlurmFlags(args.nodes, args.partition, args.time, args.account, args.gpus_per_node,
                      **{n: getattr(args, n) for n in _CLUSTER})


def _cluster_options(p) -> None:
    g = p.add_argument_group("Slurm options (as sbatch takes them; each value is checked before anything is submitted)")
    for flag, metavar, what in (
            ("--nodelist", "NODES", "run on these nodes, e.g. n[1-4]"), ("--exclude", "NODES", "never on these nodes"),
            ("--qos", "QOS", "quality of service"), ("--reservation", "NAME", "run in this reservation"),
            ("--gres", "LIST", "generic resources per node, e.g. gpu:8"), ("--constraint", "LIST", "node features, e.g. mi300x&ib"),
            ("--mem", "SIZE", "memory per node, e.g. 512G"), ("--mail-type", "TYPES", "when Slurm mails you, e.g. END,FAIL"),
            ("--mail-user", "USER", "who Slurm mails"), ("--dependency", "LIST", "start after other jobs, e.g. afterok:1234"),
            ("--signal", "[B:]SIG[@S]", "signal the job S seconds before its time limit")):
        g.add_argument(flag, metavar=metavar, help=what)
    g.add_argument("--cpus-per-task", type=int, metavar="N", help="CPUs per task")
    g.add_argument("--exclusive", action="store_true", help="the nodes are not shared with other jobs")
    g.add_argument("--requeue", action="store_true", help="Slurm may requeue the job (preemption, node failure)")


def _job_options(g, short: bool = True) -> None:
    def flags(letter: str, name: str) -> tuple[str, ...]:
        return (letter, name) if short else (name,)

    g.add_argument(*flags("-N", "--nodes"), type=int, metavar="N", help="number of nodes (default: slurm.nodes, else 1)")
    g.add_argument(*flags("-p", "--partition"), metavar="P", help="partition (default: slurm.partition, else the cluster's default)")
    g.add_argument(*flags("-t", "--time"), metavar="T", help="time limit, e.g. 4:00:00 (default: slurm.time)")
    g.add_argument(*flags("-A", "--account"), metavar="A", help="account charged (default: slurm.account)")
    g.add_argument("--gpus-per-node", type=int, metavar="G", help="GPUs per node (default: slurm.gpus_per_node)")
