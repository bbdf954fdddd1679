"""Config layers: load, validate against the JSON Schema, deep-merge.

Layers, lowest first: built-in defaults (``policies/defaults.yaml``), a Primus
checkout's ``runner/.primus.yaml``, ``~/.primus.yaml``, the project's ``.primus.yaml``
(here or up to the repository root), ``$PRIMUS_RUNNER_CONFIG``, ``--config FILE``,
command-line flags (``runner.config.layers``).
Maps merge key by key, scalars override, cumulative lists are unions.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from runner.errors import ConfigError, Problem
from runner.resources import policies_dir
from runner.secrets.names import shown_key
from runner.config.yamlsource import Located, dotted, load_yaml, nearest_line  # noqa: F401  (load_yaml: its callers)

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


class LoadedFile(NamedTuple):
    """A config file a command read: its path, whose it is, and whether it was trusted."""

    path: str
    kind: str  # checkout | user | project | env | config (runner.config.layers)
    trusted: bool = True


@dataclass
class Config:
    """The merged config, with the location of every value and every env entry."""

    data: dict
    lines: dict[tuple, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    loaded: list[LoadedFile] = field(default_factory=list)
    validated: tuple[str, ...] = ()  # digests of the layers the schema passed in this command (``known_valid``)

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
    from runner.config.layers import layer_files

    return [(layer.path, layer.must_exist) for layer in layer_files(extra)]


def load_config(
    extra: str | None = None, cli_layer: dict | None = None, project_dir: Path | None = None, user_files: bool = True,
    trust_project: bool = False,
) -> Config:
    """Load every layer, validate each against the schema, and merge them.

    ``user_files=False`` skips the checkout's, the user's and the project's files (the
    demo runs on the built-in defaults only). A project file that is not trusted
    (``runner.config.trust``) may not ask for what only the user may: each such entry is
    a problem, and the command stops (exit 2) before anything is resolved or contacted.
    ``trust_project`` (``--trust-project``) trusts the project's files as they are.
    """
    from runner.config import trust
    from runner.config.layers import layer_files
    from runner.config.yamlsource import parse_yaml, read_text

    layers = [load_yaml(policies_dir() / "defaults.yaml", "built-in defaults")]
    loaded: list[LoadedFile] = []
    problems: list[Problem] = []
    forced = trust.forced(trust_project)
    for layer_file in layer_files(extra, project_dir=project_dir, user_files=user_files):
        text = read_text(layer_file.path, "config file")
        located = parse_yaml(text, str(layer_file.path))
        trusted = True
        if layer_file.project and not forced:
            trusted = trust.is_trusted(layer_file.path, trust.digest(text.encode("utf-8", "surrogateescape")))
            if not trusted:
                problems += trust.untrusted_problems(located.data, layer_file.path, located.where)
        layers.append(located)
        loaded.append(LoadedFile(str(layer_file.path), layer_file.kind, trusted))
    if cli_layer:
        cli = Located(data=cli_layer, source="command line")
        _locate_all(cli.data, (), cli.lines, "command line")
        layers.append(cli)
    validated = []
    for layer in layers:
        problems += validate(layer, validated)
    if problems:
        raise ConfigError(problems)
    merged = Config(data={}, files=[layer.source for layer in layers], loaded=loaded, validated=tuple(validated))
    for layer in layers:
        merged.data = _merge(merged.data, layer.data, (), merged.lines, _Lines(layer.lines))
    return merged


def load_env_and_config(sources, cli_layer: dict | None = None, user_files: bool = True):
    """(env file, merged config) of ``sources`` (``runner.options.Sources``), every problem of
    both reported at once (an untrusted ``./.env`` and ``.primus.yaml`` in one message)."""
    from runner.config.envfile import load_env_file

    problems: list[Problem] = []
    env_file = config = None
    try:
        env_file = load_env_file(sources.env_file, sources.trust_project)
    except ConfigError as exc:
        problems += exc.problems
    try:
        config = load_config(sources.config_file, cli_layer, user_files=user_files, trust_project=sources.trust_project)
    except ConfigError as exc:
        problems += exc.problems
    if problems:
        raise ConfigError(problems)
    return env_file, config


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


class _Lines:
    """A layer's ``path -> file:line`` with each path's own subtree at hand, so copying
    a subtree costs its size, not the size of the whole layer (an allowlist of N names
    was N scans of N lines)."""

    def __init__(self, lines: dict | None = None):
        self.lines = lines if lines is not None else {}
        self._under: dict[tuple, list[tuple]] | None = None

    def under(self, prefix: tuple) -> list[tuple]:
        """The keys at or below ``prefix``."""
        if self._under is None:
            self._under = {}
            for key in self.lines:
                for depth in range(len(key) + 1):
                    self._under.setdefault(key[:depth], []).append(key)
        return self._under.get(prefix, [])


def _merge(low: Any, high: Any, path: tuple, lines: dict, high_lines: "_Lines | dict") -> Any:
    """Deep-merge ``high`` over ``low``; ``lines`` (for the result) is updated in place."""
    if not isinstance(high_lines, _Lines):
        high_lines = _Lines(high_lines)
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
    _drop_lines(path, low, lines)
    _copy_lines(path, path, high_lines, lines)
    return copy.deepcopy(high)


def _copy_lines(src: tuple, dst: tuple, src_lines: _Lines, dst_lines: dict) -> None:
    n = len(src)
    for key in src_lines.under(src):
        dst_lines[dst + key[n:]] = src_lines.lines[key]


def _drop_lines(path: tuple, low: Any, lines: dict) -> None:
    """Forget the locations of what ``low`` held below ``path`` (it is being replaced):
    walked from the value itself, so the cost is the size of what is dropped."""
    stack = [(path, low)]
    while stack:
        at, node = stack.pop()
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in children:
            lines.pop(at + (key,), None)
            stack.append((at + (key,), value))


# ---------------------------------------------------------------- validation

def _schema_bytes() -> bytes:
    return (policies_dir() / "config.schema.json").read_bytes()


def validate(layer: Located, validated: list[str] | None = None) -> list[Problem]:
    """Schema problems of one layer, each with ``file:line`` and a did-you-mean.

    A layer ``known_valid`` lists has none and is not validated again; one that passes has its
    digest added to ``validated``, which only a real launch records (``plan`` writes nothing).
    """
    from runner.config import known_valid

    schema_bytes = _schema_bytes()
    layer_digest = known_valid.digest(schema_bytes, layer.data)
    if known_valid.is_known(layer_digest):
        return []
    import jsonschema  # only for a layer not seen valid before

    schema = json.loads(schema_bytes)
    validator = jsonschema.Draft202012Validator(schema)
    problems = [problem for error in validator.iter_errors(layer.data) for problem in _problems(error, layer, schema)]
    problems.sort(key=lambda p: _line_of(p.where))
    if not problems and validated is not None:
        validated.append(layer_digest)
    return problems


def _line_of(where: str | None) -> int:
    try:
        return int(str(where).rsplit(":", 1)[1])
    except (IndexError, ValueError):
        return 0


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


def _problems(error, layer: Located, schema: dict) -> list[Problem]:
    """One schema error as problems: each unknown key of a mapping on its own line, with its
    did-you-mean (jsonschema reports them together); else the error itself (``_problem``)."""
    if error.validator != "additionalProperties":
        return [_problem(error, layer)]
    import difflib  # a did-you-mean, only for a key that is not known

    path = tuple(error.absolute_path)
    known = list(_subschema(schema, path).get("properties", {}))
    instance = error.instance if isinstance(error.instance, dict) else {}
    found = []
    for key in [k for k in instance if k not in known] or ["?"]:
        guess = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
        hint = f"did you mean '{guess[0]}'?" if guess else f"known keys: {', '.join(known)}"
        found.append(Problem(f"unknown key '{shown_key(key)}' in {dotted(path)}", where=layer.where(path + (key,)), hint=hint))
    return found


def _problem(error, layer: Located) -> Problem:
    """One schema error as key path, expected type and ``file:line``. Never a value from
    the file: a secret pasted into the wrong place must not be printed."""
    path = tuple(error.absolute_path)
    got = _kind(error.instance)
    if error.validator in ("anyOf", "oneOf"):
        expected = error.schema.get("description") or _describe(error.schema)
        return Problem(f"{dotted(path)}: {got} is not valid here; expected {expected}", where=layer.where(path))
    if error.validator == "type":
        expected = _describe(error.schema)
        return Problem(f"{dotted(path)}: expected {expected}, got {got}", where=layer.where(path))
    if error.validator == "enum":
        choices = ", ".join(map(str, error.validator_value))
        return Problem(f"{dotted(path)}: the value is not one of: {choices}", where=layer.where(path))
    rules = {"minimum": "at least {}", "exclusiveMinimum": "more than {}", "maximum": "at most {}",
             "exclusiveMaximum": "less than {}", "minLength": "at least {} characters long", "maxLength": "at most {} characters long",
             "minItems": "a list of at least {} items", "maxItems": "a list of at most {} items", "pattern": "of the form {}"}
    if error.validator == "pattern" and error.schema.get("description"):  # the form in words, not the regex
        return Problem(f"{dotted(path)}: the value must be {error.schema['description']}", where=layer.where(path))
    if error.validator in rules:
        rule = rules[error.validator].format(error.validator_value)
        return Problem(f"{dotted(path)}: the value must be {rule}", where=layer.where(path))
    return Problem(f"{dotted(path)}: {got} is not valid here ({error.validator})", where=layer.where(path))


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
