"""Build a plan the way a command does: the config file written where the command would read it,
the launch flags parsed by the CLI's own parser, then ``load_config`` and ``build_plan``.

The ``make_plan`` fixture (tests/conftest.py) binds it to an isolated project directory;
``plan_from_layer`` plans from a config given as one layer, with no file and no user config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import yaml


def write_config(project: Path, config: dict | str) -> Path:
    """``config`` as ``project/.primus.yaml`` (a dict is dumped as YAML, a string written as is)."""
    path = Path(project) / ".primus.yaml"
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config, sort_keys=False))
    return path


def write_project(project: Path, config: dict | str, env_file: str | None = None) -> Path:
    """``config`` as ``project/.primus.yaml`` and ``env_file`` (if given) as ``project/.env``, mode 0600 as a
    user keeps one; returns ``project``."""
    write_config(project, config)
    if env_file is not None:
        path = Path(project) / ".env"
        path.write_text(env_file)
        path.chmod(0o600)
    return Path(project)


def launch_flags(argv: Sequence[str] = ()):
    """``plan ARGV`` through the CLI's parser, to the LaunchFlags a launch would get."""
    from runner.cli import build_parser
    from runner.cli.dispatch import flags as _flags

    return _flags(build_parser().parse_args(["plan", *argv]))


def plan_from(project: Path, config: dict | str | None, command: Sequence[str] = ("true",), host: Mapping | None = None,
              flags=None, env_file=None, extra: str | None = None, **build_kw):
    """The ``Planned`` for ``config`` in ``project`` (the current directory and HOME, as the caller set).

    ``flags``: CLI words (``["--gpu", "none"]``) parsed as ``plan`` parses them, or a ``LaunchFlags``;
    ``host``: the host environment the plan reads; ``build_kw`` go to ``build_plan`` (``name=``, ...).
    """
    from runner.config import load_config
    from runner.config.envfile import EnvFile
    from runner.options import LaunchFlags
    from runner.plan import build_plan

    if config is not None:
        write_config(project, config)
    if flags is None or not isinstance(flags, LaunchFlags):
        flags = launch_flags(flags or ())
    config = load_config(extra, flags.config_layer() or None, project_dir=Path(project))  # as session.prepare loads it
    return build_plan(config, list(command), dict(host or {}),
                      env_file if env_file is not None else EnvFile(None), flags, **build_kw)


def plan_from_layer(layer: Mapping, command: Sequence[str] = ("true",), host: Mapping | None = None, flags=None,
                    env_file=None, **build_kw):
    """``(config, planned)``: the config of ``layer`` alone (no file is read, no user config) and the ``Planned``
    ``build_plan`` gives for it; ``flags`` a ``LaunchFlags`` (default: none set)."""
    from runner.config import load_config
    from runner.config.envfile import EnvFile
    from runner.options import LaunchFlags
    from runner.plan import build_plan

    config = load_config(None, dict(layer), user_files=False)
    planned = build_plan(config, list(command), dict(host or {}), env_file if env_file is not None else EnvFile(None, {}),
                         flags if flags is not None else LaunchFlags(), **build_kw)
    return config, planned
