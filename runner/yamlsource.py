"""Safe YAML loading that remembers where every value came from.

The Primus launcher parsed YAML with bash; here a real parser is used, bounded
against hostile input (size, alias expansion, depth) and every value keeps its
``file:line`` so each error can point at it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import ConfigError, Problem

MAX_BYTES = 1 << 20  # a config file is a page of YAML, not a data set
MAX_NODES = 100_000  # bounds alias ("billion laughs") expansion
MAX_DEPTH = 64

Path_ = tuple  # a key path such as ("container", "options", "env", 3)


@dataclass
class Located:
    """A parsed document plus ``path -> "file:line"`` for every key and list item."""

    data: Any
    lines: dict[tuple, str] = field(default_factory=dict)
    source: str = ""

    def where(self, path: tuple) -> str | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)


def read_text(path: Path, what: str) -> str:
    """Read a small UTF-8 file, turning every way it can fail into one clear problem."""
    shown = str(path)
    try:
        resolved = path.resolve(strict=True)
        size = resolved.stat().st_size
        if not resolved.is_file():
            raise ConfigError(Problem(f"{what} {shown} is not a regular file", hint="point it at a file"))
        if size > MAX_BYTES:
            raise ConfigError(
                Problem(f"{what} {shown} is {size:,} bytes; the limit is {MAX_BYTES:,}", hint="is this the right file?")
            )
        raw = resolved.read_bytes()
    except RuntimeError:  # symlink loop on older Pythons
        raise ConfigError(Problem(f"{what} {shown} is a symlink loop", hint="fix the link"))
    except FileNotFoundError:
        raise ConfigError(Problem(f"{what} {shown} does not exist", hint="check the path"))
    except OSError as exc:
        reason = "is a symlink loop" if exc.errno == 40 else f"cannot be read: {exc.strerror}"
        raise ConfigError(Problem(f"{what} {shown} {reason}", hint="check the path and its permissions"))
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise ConfigError(Problem(f"{what} is binary (NUL byte)", where=f"{shown}:{line}", hint="expected a text file"))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(Problem(f"{what} is not valid UTF-8", where=f"{shown}:{line}", hint="save it as UTF-8"))


def load_yaml(path: Path, what: str = "config file") -> Located:
    text = read_text(path, what)
    return parse_yaml(text, str(path))


def parse_yaml(text: str, source: str) -> Located:
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = yaml.compose(text, Loader=loader_cls)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        raise ConfigError(Problem(f"malformed YAML: {exc.problem or exc.context}", where=where))
    except yaml.YAMLError as exc:
        raise ConfigError(Problem(f"malformed YAML: {exc}", where=source))
    except RecursionError:
        raise ConfigError(Problem("YAML nested too deeply", where=source))
    located = Located(data=None, source=source)
    if node is None:
        located.data = {}
        return located
    located.lines[()] = f"{source}:{node.start_mark.line + 1}"
    located.data = _Builder(source, located.lines).build(node, (), 0)
    return located


class _Builder:
    """Turns a composed YAML node tree into plain data, bounded and located."""

    def __init__(self, source: str, lines: dict):
        self.source = source
        self.lines = lines
        self.count = 0
        import yaml

        self._constructor = yaml.SafeLoader(stream="")

    def _where(self, node) -> str:
        return f"{self.source}:{node.start_mark.line + 1}"

    def build(self, node, path: tuple, depth: int) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise ConfigError(
                Problem(f"YAML expands to more than {MAX_NODES:,} values (alias bomb?)", where=self._where(node))
            )
        if depth > MAX_DEPTH:
            raise ConfigError(Problem(f"YAML nested deeper than {MAX_DEPTH} levels", where=self._where(node)))
        kind = node.id
        if kind == "mapping":
            result: dict = {}
            self._constructor.flatten_mapping(node)
            for key_node, value_node in node.value:
                key = self.build(key_node, path, depth + 1)
                if not isinstance(key, (str, int, float, bool)) or key is None:
                    raise ConfigError(Problem("mapping keys must be plain strings", where=self._where(key_node)))
                key = str(key) if not isinstance(key, str) else key
                if key in result:
                    raise ConfigError(Problem(f"duplicate key '{key}'", where=self._where(key_node)))
                self.lines[path + (key,)] = self._where(key_node)
                result[key] = self.build(value_node, path + (key,), depth + 1)
            return result
        if kind == "sequence":
            items = []
            for index, item in enumerate(node.value):
                self.lines[path + (index,)] = self._where(item)
                items.append(self.build(item, path + (index,), depth + 1))
            return items
        try:
            return self._constructor.construct_object(node, deep=True)
        except Exception as exc:  # a scalar with a bad tag or value
            raise ConfigError(Problem(f"cannot read value: {exc}", where=self._where(node)))


def file_mode_warning(path: Path) -> str | None:
    """Secrets files should be private to their owner."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if mode & 0o077:
        return f"{path} is readable by group/others (mode {oct(mode & 0o777)}); run: chmod 600 {path}"
    return None


def is_tracked_by_git(path: Path) -> bool:
    import subprocess

    try:
        result = subprocess.run(
            ["git", "ls-files", "--error-unmatch", os.path.basename(path)],
            cwd=path.parent,
            capture_output=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0
