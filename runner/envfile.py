"""The dotenv file with values (secrets allowed): read, never written, never exported."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import ConfigError, Problem
from runner.yamlsource import file_mode_warning, is_tracked_by_git, read_text

DEFAULT_NAME = ".env"


@dataclass(frozen=True)
class EnvFile:
    path: str | None
    values: dict[str, str | None] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def load_env_file(explicit: str | None) -> EnvFile:
    """Read ``--env-file`` (must exist) or ``./.env`` (when present); ``os.environ`` is untouched."""
    if explicit:
        path = Path(explicit)
    else:
        path = Path.cwd() / DEFAULT_NAME
        if not path.exists():
            return EnvFile(None)
    text = read_text(path, "env file")
    import io

    from dotenv import dotenv_values

    values = dict(dotenv_values(stream=io.StringIO(text), interpolate=False))
    warnings: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        key = line.strip().removeprefix("export ").split("=", 1)[0].strip()
        if "=" in line and key and not key.startswith("#"):
            if key in seen:
                warnings.append(f"{path}:{lineno}: {key} is set again (first at line {seen[key]}); the last value wins")
            seen.setdefault(key, lineno)
    bad = [k for k in values if not k.replace("_", "a").isalnum() or k[:1].isdigit()]
    if bad:
        raise ConfigError(Problem(f"invalid variable name(s) in env file: {', '.join(sorted(bad))}", where=str(path), hint="names are letters, digits and _"))
    if (mode := file_mode_warning(path)) is not None:
        warnings.append(mode)
    if is_tracked_by_git(path):
        warnings.append(f"{path} is tracked by git: its secrets are in the repository history; git rm --cached it and rotate them")
    return EnvFile(str(path), values, tuple(warnings))
