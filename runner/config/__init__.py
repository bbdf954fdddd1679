"""Config layers: load, validate against the JSON Schema, deep-merge.

Layers, lowest first: built-in defaults (``policies/defaults.yaml``),
``~/.primus.yaml``, ``./.primus.yaml``, ``--config FILE``, command-line flags.
Maps merge key by key, scalars override, cumulative lists are unions.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import ConfigError, Problem
from runner.resources import policies_dir
from runner.config.yamlsource import Located, load_yaml, nearest_line

# Lists that accumulate across layers instead of being replaced.
CUMULATIVE = {
    ("container", "options", "env"),
    ("container", "options", "device"),
    ("container", "options", "cap-add"),
    ("container", "options", "volume"),
    ("passthrough", "prefixes"),
    ("passthrough", "deny"),
    ("images", "secrets"),
    ("passthrough", "secrets"),
    ("passthrough", "required"),
}
ENV_PATH = ("container", "options", "env")


@dataclass
class Config:
    """The merged config, with the location of every value and every env entry."""

    data: dict
    lines: dict[tuple, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def get(self, *path: str, default: Any = None) -> Any:
        node: Any = self.data
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    def where(self, path: tuple) -> str | None:
        return nearest_line(self.lines, path)


def default_layer_paths(extra: str | None) -> list[tuple[Path, bool]]:
    """(path, must_exist) for each file layer above the built-in defaults."""
    layers = [(Path.home() / ".primus.yaml", False), (Path.cwd() / ".primus.yaml", False)]
    if extra:
        layers.append((Path(extra), True))
    return layers


def load_config(
    extra: str | None = None, cli_layer: dict | None = None, project_dir: Path | None = None, user_files: bool = True
) -> Config:
    """Load every layer, validate each against the schema, and merge them.

    ``user_files=False`` skips ``~/.primus.yaml`` and ``./.primus.yaml`` (the
    demo runs on the built-in defaults only).
    """
    paths = default_layer_paths(extra) if user_files else ([(Path(extra), True)] if extra else [])
    if project_dir is not None and user_files:
        paths[1] = (project_dir / ".primus.yaml", False)
    layers = [load_yaml(policies_dir() / "defaults.yaml", "built-in defaults")]
    seen: set[Path] = set()
    for path, must_exist in paths:
        if not must_exist and not path.exists():
            continue
        key = path.resolve() if path.exists() else path
        if key in seen:  # ~/.primus.yaml is also ./.primus.yaml when run from $HOME
            continue
        seen.add(key)
        layers.append(load_yaml(path))
    problems: list[Problem] = []
    for layer in layers:
        problems += validate(layer)
    if cli_layer:
        cli = Located(data=cli_layer, source="command line")
        _locate_all(cli.data, (), cli.lines, "command line")
        problems += validate(cli)
        layers.append(cli)
    if problems:
        raise ConfigError(problems)
    merged = Config(data={}, files=[layer.source for layer in layers])
    for layer in layers:
        merged.data = _merge(merged.data, layer.data, (), merged.lines, layer.lines)
    return merged


def _locate_all(data: Any, path: tuple, lines: dict, where: str) -> None:
    lines[path] = where
    if isinstance(data, dict):
        for key, value in data.items():
            _locate_all(value, path + (key,), lines, where)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _locate_all(value, path + (index,), lines, where)


def _env_key(entry: Any) -> Any:
    return entry.split("=", 1)[0] if isinstance(entry, str) else entry


def _merge(low: Any, high: Any, path: tuple, lines: dict, high_lines: dict) -> Any:
    """Deep-merge ``high`` over ``low``; ``lines`` (for the result) is updated in place."""
    if isinstance(low, dict) and isinstance(high, dict):
        result = dict(low)
        for key, value in high.items():
            child = path + (key,)
            if key in result:
                result[key] = _merge(result[key], value, child, lines, high_lines)
            else:
                result[key] = copy.deepcopy(value)
                _copy_lines(child, child, high_lines, lines)
        return result
    if isinstance(low, list) and isinstance(high, list) and path in CUMULATIVE:
        # Union, first occurrence keeps its place; for env, a later KEY=VALUE replaces KEY.
        keyfn = _env_key if path == ENV_PATH else (lambda e: e)
        result = list(low)
        index_of = {keyfn(e): i for i, e in enumerate(result)}
        for j, entry in enumerate(high):
            k = keyfn(entry)
            if k in index_of:
                i = index_of[k]
                if path == ENV_PATH and entry != result[i] and "=" in str(entry):
                    result[i] = entry
                if entry == result[i]:  # listed again (or replaced) higher up: its location is the highest layer's
                    _copy_lines(path + (j,), path + (i,), high_lines, lines)
                continue
            index_of[k] = len(result)
            _copy_lines(path + (j,), path + (len(result),), high_lines, lines)
            result.append(entry)
        return result
    _drop_lines(path, lines)
    _copy_lines(path, path, high_lines, lines)
    return copy.deepcopy(high)


def _copy_lines(src: tuple, dst: tuple, src_lines: dict, dst_lines: dict) -> None:
    n = len(src)
    for key, where in src_lines.items():
        if key[:n] == src:
            dst_lines[dst + key[n:]] = where


def _drop_lines(path: tuple, lines: dict) -> None:
    n = len(path)
    for key in [k for k in lines if k[:n] == path and len(k) > n]:
        del lines[key]


# ---------------------------------------------------------------- validation

def _schema_bytes() -> bytes:
    return (policies_dir() / "config.schema.json").read_bytes()


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "primus-runner" / "valid"


def _fingerprint(schema: bytes, data: Any) -> str:
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(schema + b"\0" + blob).hexdigest()


def validate(layer: Located) -> list[Problem]:
    """Schema problems of one layer, each with ``file:line`` and a did-you-mean.

    jsonschema costs ~150 ms to import, so a layer already found valid is
    remembered by a hash of (schema, content) in the user's cache directory.
    The cache holds hashes only: a config never holds a secret value, and even
    so a hash does not reveal one.
    """
    schema_bytes = _schema_bytes()
    marker = _cache_dir() / _fingerprint(schema_bytes, layer.data)
    if marker.exists():
        return []
    import jsonschema

    schema = json.loads(schema_bytes)
    validator = jsonschema.Draft202012Validator(schema)
    problems = [_problem(error, layer, schema) for error in validator.iter_errors(layer.data)]
    problems.sort(key=lambda p: _line_of(p.where))
    if not problems:
        _remember(marker)
    return problems


def _remember(marker: Path) -> None:
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass  # a read-only home only costs speed


def _line_of(where: str | None) -> int:
    try:
        return int(str(where).rsplit(":", 1)[1])
    except (IndexError, ValueError):
        return 0


def _dotted(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _subschema(schema: dict, path: tuple) -> dict:
    node = schema
    for part in path:
        if isinstance(part, int):
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(part, {})
    return node


def _kind(value: Any) -> str:
    """The type of a value read from a file, never the value: errors may reach CI annotations."""
    if value is None:
        return "null"
    return {bool: "true/false", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a mapping"}.get(
        type(value), type(value).__name__)


def _problem(error, layer: Located, schema: dict) -> Problem:
    """One schema error as key path, expected type and ``file:line``. Never a value from
    the file: a secret pasted into the wrong place must not be printed."""
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties":
        known = list(_subschema(schema, path).get("properties", {}))
        instance = error.instance if isinstance(error.instance, dict) else {}
        unknown = [k for k in instance if k not in known]
        key = unknown[0] if unknown else "?"
        guess = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"did you mean '{guess[0]}'?" if guess else f"known keys: {', '.join(known)}"
        return Problem(f"unknown key '{key}' in {_dotted(path)}", where=layer.where(path + (key,)), hint=hint)
    got = _kind(error.instance)
    if error.validator in ("anyOf", "oneOf"):
        expected = error.schema.get("description") or _describe(error.schema)
        return Problem(f"{_dotted(path)}: {got} is not valid here; expected {expected}", where=layer.where(path))
    if error.validator == "type":
        expected = _describe(error.schema)
        return Problem(f"{_dotted(path)}: expected {expected}, got {got}", where=layer.where(path))
    if error.validator == "enum":
        choices = ", ".join(map(str, error.validator_value))
        return Problem(f"{_dotted(path)}: the value is not one of: {choices}", where=layer.where(path))
    rules = {"minimum": "at least {}", "exclusiveMinimum": "more than {}", "maximum": "at most {}",
             "exclusiveMaximum": "less than {}", "minLength": "at least {} characters long", "maxLength": "at most {} characters long",
             "minItems": "a list of at least {} items", "maxItems": "a list of at most {} items", "pattern": "of the form {}"}
    if error.validator in rules:
        rule = rules[error.validator].format(error.validator_value)
        return Problem(f"{_dotted(path)}: the value must be {rule}", where=layer.where(path))
    return Problem(f"{_dotted(path)}: {got} is not valid here ({error.validator})", where=layer.where(path))


def _describe(schema: dict) -> str:
    if "anyOf" in schema:
        return " or ".join(_describe(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    kind = schema.get("type", "a value")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        return f"a list of {_describe(schema.get('items', {}))}s".replace("a list of a ", "a list of ").replace("a list of an ", "a list of ")
    return {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true/false", "object": "a mapping"}.get(kind, kind)
