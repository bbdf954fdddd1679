"""Safe YAML loading that remembers where every value came from.

The Primus launcher parsed YAML with bash; here a real parser is used, bounded
against hostile input (size, alias expansion, depth) and every value keeps its
``file:line`` so each error can point at it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from runner.errors import ConfigError, Problem
from runner.secrets.names import shown_key

MAX_BYTES = 1 << 20  # a config file is a page of YAML, not a data set
MAX_NODES = 100_000  # bounds alias ("billion laughs") expansion
MAX_EXPANDED_BYTES = 16 * MAX_BYTES  # bounds it in bytes too: 95,000 aliases of one 600 KB string are under MAX_NODES
MAX_DEPTH = 64

Path_ = tuple  # a key path such as ("container", "options", "env", 3)


class Located:
    """A parsed document plus ``path -> "file:line"`` for every key and list item."""

    def __init__(self, data: Any, lines: dict[tuple, str] | None = None, source: str = ""):
        self.data = data
        self.lines = {} if lines is None else lines
        self.source = source

    def where(self, path: tuple) -> str | None:
        return nearest_line(self.lines, path) or self.lines.get((), None)


def nearest_line(lines: dict, path: tuple) -> str | None:
    """``file:line`` of ``path`` or of its nearest ancestor that has one."""
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None


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
    """Parse one document, bounded: the parser's events are composed here, without
    recursion, and nesting deeper than ``MAX_DEPTH`` is refused before it is built
    (libyaml's own composer recurses on the C stack: ~25k levels crash it)."""
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = _compose(yaml.parse(text, Loader=loader_cls), source)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        raise ConfigError(Problem(f"malformed YAML: {exc.problem or exc.context}", where=where))
    except yaml.YAMLError as exc:
        raise ConfigError(Problem(f"malformed YAML: {type(exc).__name__}", where=source))
    except RecursionError:
        raise ConfigError(Problem("YAML nested too deeply", where=source))
    located = Located(data=None, source=source)
    if node is None:
        located.data = {}
        return located
    located.lines[()] = f"{source}:{node.start_mark.line + 1}"
    located.data = _Builder(source, located.lines).build(node, (), 0)
    return located


def _compose(events, source: str):
    """Nodes from parser events, iteratively, with anchors and aliases (shared, not
    copied: the builder counts what they expand to). Only the first document."""
    import yaml
    from yaml.resolver import Resolver

    resolver = Resolver()
    anchors: dict[str, Any] = {}
    stack: list[list] = []  # [node, pending key for a mapping]
    root = None

    def attach(node) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        parent = stack[-1]
        if isinstance(parent[0], yaml.SequenceNode):
            parent[0].value.append(node)
        elif parent[1] is None:
            parent[1] = node
        else:
            parent[0].value.append((parent[1], node))
            parent[1] = None

    for event in events:
        kind = type(event)
        if kind is yaml.AliasEvent:
            if event.anchor not in anchors:
                raise ConfigError(Problem("an alias (*name) that no anchor (&name) defines before it", where=f"{source}:{event.start_mark.line + 1}"))
            attach(anchors[event.anchor])
        elif kind is yaml.ScalarEvent:
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
            node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
            if event.anchor:
                anchors[event.anchor] = node
            attach(node)
        elif kind in (yaml.SequenceStartEvent, yaml.MappingStartEvent):
            if len(stack) >= MAX_DEPTH:
                raise ConfigError(Problem(f"YAML nested deeper than {MAX_DEPTH} levels", where=f"{source}:{event.start_mark.line + 1}"))
            sequence = kind is yaml.SequenceStartEvent
            cls = yaml.SequenceNode if sequence else yaml.MappingNode
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolver.resolve(cls, None, event.implicit)
            node = cls(tag, [], event.start_mark, None, flow_style=event.flow_style)
            if event.anchor:
                anchors[event.anchor] = node
            attach(node)
            stack.append([node, None])
        elif kind in (yaml.SequenceEndEvent, yaml.MappingEndEvent):
            node = stack.pop()[0]
            node.end_mark = event.end_mark
        elif kind is yaml.DocumentEndEvent:
            break
    return root


class _Builder:
    """Turns a composed YAML node tree into plain data, bounded and located.

    Merge keys (``<<``) are resolved here, not by PyYAML's ``flatten_mapping``
    (which copies merged pairs before anything can count them: a 500-byte merge
    bomb grows to gigabytes): every merged value is built, and counted, like any
    other. Keys written in the mapping override merged ones; in a merge list the
    earlier mapping wins.
    """

    def __init__(self, source: str, lines: dict):
        self.source = source
        self.lines = lines
        self.count = 0
        self.bytes = 0
        self._merged: dict[int, tuple[dict, int, int]] = {}
        import yaml

        self._constructor = yaml.SafeLoader(stream="")

    def _where(self, node) -> str:
        return f"{self.source}:{node.start_mark.line + 1}"

    def _merge_source(self, node, path: tuple, depth: int) -> dict:
        """A mapping merged with ``<<``, built once per anchor; each use still counts every
        value it brings, so a merge bomb reaches ``MAX_NODES`` at the cost of its distinct nodes."""
        cached = self._merged.get(id(node))
        if cached is None:
            before, bytes_before = self.count, self.bytes
            cached = self._merged[id(node)] = (self.build(node, path, depth), self.count - before, self.bytes - bytes_before)
            return cached[0]
        self.count += cached[1]
        self.bytes += cached[2]
        self._check_size(node)
        return cached[0]

    def _check_size(self, node) -> None:
        if self.count > MAX_NODES:
            raise ConfigError(
                Problem(f"YAML expands to more than {MAX_NODES:,} values (alias bomb?)", where=self._where(node))
            )
        if self.bytes > MAX_EXPANDED_BYTES:
            raise ConfigError(
                Problem(f"YAML expands to more than {MAX_EXPANDED_BYTES:,} bytes of values (alias bomb?)", where=self._where(node))
            )

    def build(self, node, path: tuple, depth: int) -> Any:
        self.count += 1
        if node.id == "scalar":
            self.bytes += len(node.value)  # every use of an aliased string counts: that is what it expands to
        self._check_size(node)
        if depth > MAX_DEPTH:
            raise ConfigError(Problem(f"YAML nested deeper than {MAX_DEPTH} levels", where=self._where(node)))
        kind = node.id
        if kind == "mapping":
            result: dict = {}
            merged: dict = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    sources = value_node.value if value_node.id == "sequence" else [value_node]
                    for source in sources:
                        if source.id != "mapping":
                            raise ConfigError(Problem("a merge key (<<) takes a mapping or a list of mappings", where=self._where(source)))
                        for key, value in self._merge_source(source, path, depth + 1).items():
                            merged.setdefault(key, copy.deepcopy(value))
                    continue
                key = self.build(key_node, path, depth + 1)
                if not isinstance(key, (str, int, float, bool)) or key is None:
                    raise ConfigError(Problem("mapping keys must be plain strings", where=self._where(key_node)))
                key = str(key) if not isinstance(key, str) else key
                if key in result:
                    raise ConfigError(Problem(f"duplicate key '{key}'", where=self._where(key_node)))
                self.lines[path + (key,)] = self._where(key_node)
                result[key] = self.build(value_node, path + (key,), depth + 1)
            for key, value in merged.items():
                result.setdefault(key, value)
            return result
        if kind == "sequence":
            items = []
            for index, item in enumerate(node.value):
                self.lines[path + (index,)] = self._where(item)
                items.append(self.build(item, path + (index,), depth + 1))
            return items
        try:
            return self._constructor.construct_object(node, deep=True)
        except Exception:  # a scalar with a bad tag or value; the message would quote the value
            raise ConfigError(Problem(f"cannot read the value (tag {node.tag.rsplit(':', 1)[-1]})", where=self._where(node)))


def file_mode_warning(path: Path) -> str | None:
    """Secrets files should be private to their owner."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if mode & 0o077:
        return f"{path} is readable by group/others (mode {oct(mode & 0o777)}); run: chmod 600 {path}"
    return None


def dotted(path: tuple) -> str:
    """A key path as messages print it (``container.options.env[2]``), keys that may be secrets hidden."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{shown_key(part)}" if out else shown_key(part))
    return out or "(top level)"
