"""The ``slurm:`` config section with the command line on top (``SlurmSettings``), every value
checked as a launch checks it. Apart from the batch script and the plan file (``script``): ``plan``,
``check`` and every dry run check the user's ``slurm:`` section here without loading what
``submit`` writes (``runner.engines.config_problems``)."""

from __future__ import annotations

import re
from typing import NamedTuple

from runner.engines.slurm import values
from runner.engines.slurm.flags import SlurmFlags
from runner.errors import ConfigError, Problem


class SlurmSettings(NamedTuple):
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
    directive = None if "gpus-per-node" in given_keys(flags.args) else (asked if asked is not None else from_file)
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
    given = given_keys(flags.args)
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


def given_keys(args: tuple[str, ...]) -> set[str]:
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
