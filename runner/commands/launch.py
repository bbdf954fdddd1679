"""What the launching commands (``plan``, ``up``, ``submit``, ``shell``) and the ones that remove
(``down``, ``cancel``, ``build``) share: the engine a launch runs on, and whether this is a dry run."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import Sources

# up's switches an engine may not honour (its ``launch_options``), as the command line spells them
_SWITCHES = (("keep", "--keep"), ("build", "--build"), ("interactive", "-i"), ("tty", "-t"))


def launch_engine(name: str | None, default: str | None = None, **switches: bool):
    """The engine a launch runs on: ``name`` (``--engine``), else ``default``, else the registry's
    default; a switch of ``up`` given that the engine does not honour (``--keep`` for Slurm) is a
    usage error (exit 2)."""
    from runner.engines import DEFAULT, engine_named
    from runner.errors import UsageError

    engine = engine_named(name or default or DEFAULT)
    taken = engine.launch_options
    refused = [flag for key, flag in _SWITCHES if switches.get(key) and key not in taken]
    if refused:
        raise UsageError(f"the {engine.name} engine does not take {', '.join(refused)}",
                         hint=f"drop {'them' if len(refused) > 1 else 'it'}, or launch with --engine {DEFAULT}")
    return engine


def dry_run(asked: bool, sources: "Sources") -> bool:
    """The global ``--dry-run`` or the command's own (``asked``), or ``dry_run: true`` in a launcher section."""
    if asked:
        return True
    from runner.config import load_config
    from runner.config.switches import launcher_switch

    return launcher_switch(load_config(sources.config_file, trust_project=sources.trust_project), "dry_run")
