"""Engines: each turns a ``LaunchPlan`` into its own request and runs it (``base.Engine``).

``docker`` (Docker and Podman through one Engine API client), ``slurm`` (one
container per node through a node agent), ``process`` (a child process on this
host, the launcher's direct mode). ``ENGINES`` is the registry: a new engine is
one module and one line here (the checklist is in docs/architecture.md).
"""

from __future__ import annotations

import importlib

# name -> (module, class[, the light module whose ``config_problems(config)`` checks the engine's own
# config section, the top-level key named like the engine]); imported on demand so a command loads
# only its own engine.
ENGINES: dict[str, tuple[str, ...]] = {
    "docker": ("runner.engines.docker", "DockerEngine"),
    "slurm": ("runner.engines.slurm.engine", "SlurmEngine", "runner.engines.slurm.settings"),
    "process": ("runner.engines.process", "ProcessEngine"),
}
DEFAULT = "docker"  # what `up`, `plan`, `shell` and `check` launch on without --engine (Docker or Podman: container.engine)

# The other names --engine takes: the registered engine each means and the container.engine it implies
# (a registered name implies none: `docker` is Docker or Podman, as container.engine picks).
ALIASES: dict[str, tuple[str, str | None]] = {"podman": ("docker", "podman"), "direct": ("process", None)}


def names() -> list[str]:
    """Every name --engine takes: the registry's, then the aliases."""
    return [*ENGINES, *ALIASES]


def known(name: str) -> tuple[str, str | None]:
    """(the registered engine, the container.engine it implies) for a name the user typed;
    an unknown one is a usage error (exit 2)."""
    from runner.errors import UsageError

    if name in ENGINES:
        return name, None
    if name in ALIASES:
        return ALIASES[name]
    raise UsageError(f"unknown engine {name!r}", hint=f"--engine takes one of: {', '.join(names())}")


def implied_container_engine(name: str | None) -> str | None:
    """The container.engine that ``--engine NAME`` implies (``podman``), None when it implies none."""
    return ALIASES[name][1] if name in ALIASES else None


def engine_for(name: str):
    """The engine named ``name``."""
    try:
        module, cls = ENGINES[name][:2]
    except KeyError:
        raise ValueError(f"unknown engine {name!r} (known: {', '.join(ENGINES)})") from None
    return getattr(importlib.import_module(module), cls)()


def engine_named(name: str):
    """``engine_for`` for a name the user typed (``--engine``, an alias too): an unknown one is a usage error (exit 2)."""
    return engine_for(known(name)[0])


def _has(engine, verb: str) -> bool:
    return callable(getattr(engine, verb, None))


def engines_with(verb: str) -> list[str]:
    """The registered engines that declare ``verb`` (``runner.engines.base.VERBS``)."""
    return [name for name in ENGINES if _has(engine_for(name), verb)]


def engine_for_verb(verb: str, chosen: str | None = None, name: str | None = None):
    """The engine a command acts through: the one ``--engine`` names; else the first engine that
    claims ``name`` as its own kind of id (``logs 1234``: a Slurm job); else the first one, in
    registry order, that declares ``verb``. The caller hands the verb its ``Selection``."""
    from runner.errors import UsageError

    if chosen:
        return engine_named(chosen)
    fallback = None
    for known in ENGINES:
        engine = engine_for(known)
        if not _has(engine, verb):
            continue
        if name is None or (_has(engine, "claims") and engine.claims(name)):
            return engine
        fallback = fallback or engine
    if fallback is None:
        raise UsageError(f"no engine has `{verb}`", hint=f"the engines: {', '.join(ENGINES)}")
    return fallback


def verb(engine, name: str):
    """The engine's own ``name`` verb, or one clear usage error (exit 2) naming those that have it."""
    from runner.errors import UsageError

    found = getattr(engine, name, None)
    if callable(found):
        return found
    others = [known for known in engines_with(name) if known != engine.name]
    raise UsageError(f"the {engine.name} engine has no `{name}`; " + (f"engines with it: {', '.join(others)}" if others else "no engine has it"),
                     hint=f"primus-runner {name} --engine {others[0]}" if others else None)


def config_problems(config) -> list:
    """Every engine's own config section checked as its launch would check it (``plan``, ``check``
    and every dry run report the same problems, with ``file:line``, before anything exists)."""
    from runner.resources import policies_dir

    defaults = str(policies_dir() / "defaults.yaml")
    users = {key[0] for key, where in config.lines.items() if key and not (where or "").startswith(defaults)}
    problems: list = []
    for name, entry in ENGINES.items():
        if len(entry) > 2 and name in users:  # only the built-in section: nothing of the user's to check, nothing loaded
            problems += importlib.import_module(entry[2]).config_problems(config)
    return problems
