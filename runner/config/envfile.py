"""The dotenv file with values (secrets allowed): read, never written, never exported."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from runner.errors import ConfigError, Problem
from runner.config.yamlsource import file_mode_warning, read_text
from runner.secrets.names import NAME_RE

DEFAULT_NAME = ".env"


@dataclass(frozen=True)
class EnvFile:
    path: str | None
    values: dict[str, str | None] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    trusted: bool = True  # False: the project's ./.env, not trusted (runner.config.trust)


def env_lookup(env_file: EnvFile, environ: Mapping[str, str] | None = None) -> Callable[[str], str | None]:
    """A variable's value as the runner sees it: the environment first (a set value wins, even an
    empty one), then the env file. The one such lookup: registry logins, references, trackers."""
    environ = os.environ if environ is None else environ

    def lookup(name: str) -> str | None:
        value = environ.get(name)
        return value if value is not None else env_file.values.get(name)

    return lookup


def load_env_file(explicit: str | None, trust_project: bool = False) -> EnvFile:
    """Read ``--env-file`` (must exist) or ``./.env`` (when present); ``os.environ`` is untouched.

    ``--env-file`` is the user's; ``./.env`` came with the directory: while it is not
    trusted it may hold values but not say where a credential is sent (exit 2)."""
    if explicit == os.devnull:  # compose's way to read no env file, not even ./.env
        return EnvFile(None)
    if explicit:
        path = Path(explicit)
    else:
        path = Path.cwd() / DEFAULT_NAME
        if not path.exists():
            return EnvFile(None)
        from runner.config.layers import refuse_if_not_yours

        refuse_if_not_yours(path, "the env file")
    text = read_text(path, "env file")
    import io

    from dotenv.parser import parse_stream

    values: dict[str, str | None] = {}
    warnings: list[str] = []
    seen: dict[str, int] = {}
    bad: list[int] = []
    # Errors name the line, never its text: a bare token line is usually a pasted secret.
    for binding in parse_stream(io.StringIO(text)):
        lineno = binding.original.line
        if binding.error or (binding.key is not None and (binding.value is None or not NAME_RE.match(binding.key))):
            bad.append(lineno)
            continue
        if binding.key is None:  # a blank line or a comment
            continue
        if binding.key in seen:
            warnings.append(f"{path}:{lineno}: {binding.key} is set again (first at line {seen[binding.key]}); the last value wins")
        seen.setdefault(binding.key, lineno)
        values[binding.key] = binding.value
    if bad:
        lines = ", ".join(map(str, bad))
        raise ConfigError(Problem(
            f"env file line{'s' if len(bad) > 1 else ''} {lines}: not NAME=value with a valid name (the text is not shown: it may be a secret)",
            where=f"{path}:{bad[0]}", hint="write NAME=value; names are letters, digits and _, not starting with a digit"))
    trusted = True
    if not explicit:
        from runner.config import trust

        if not trust.forced(trust_project):
            trusted = trust.is_trusted(path, trust.digest(text.encode("utf-8", "surrogateescape")))
            if not trusted and (problems := trust.env_file_problems(values, seen, path)):
                raise ConfigError(problems)
    if (mode := file_mode_warning(path)) is not None:
        warnings.append(mode)
    from runner.git import is_tracked  # subprocess: only when an env file is there

    if is_tracked(path):
        warnings.append(f"{path} is tracked by git: its secrets are in the repository history; git rm --cached it and rotate them")
    return EnvFile(str(path), values, tuple(warnings), trusted)
