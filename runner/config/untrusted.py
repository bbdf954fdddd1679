"""What a project file nobody has trusted may set: one table, everything else is an ask.

A cloned repository's ``.primus.yaml`` configures its job: the image, the mounts, the
sizes, the names it wants forwarded. ``ALLOWED`` lists each key it may set and the kind
of value it may give (``Kind``); a key the table does not list, or a value its kind does
not take, is an *ask*: only ``primus-runner trust`` (or the user's own files) may set
it, and ``trust --show`` lists it with its file and line. A key added to the schema is
therefore an ask until it is added here, never silently open. ``docs/security.md``
documents the table (a unit test keeps the two equal).

An untrusted ``./.env`` may hold any value except the names that say where or how a
credential from your environment is sent (``env_file_asks``).

Patterns are dotted key paths; ``*`` is any key of a mapping, ``[]`` any item of a list.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

from runner.resources import policies_dir
from runner.secrets.names import is_runner_variable

# Variables that say where (or how, TLS and proxies) a credential from your environment is
# sent: these, and each tracker's (its SETTINGS.endpoints, listed in the schema's trackers
# section as x-endpoint-variables: this layer is below the trackers).
_OWN_ENDPOINT_NAMES = frozenset({
    "HF_ENDPOINT", "DOCKER_LOGIN_REGISTRY",
    "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SECRETS_MANAGER", "AWS_CA_BUNDLE",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE",
})
HOST_SCHEMES = {"cmd": "runs a program on this host", "file": "reads a file of this host",
                "pass": "reads your password store", "aws-sm": "reads your AWS Secrets Manager"}


@functools.lru_cache(maxsize=1)
def _schema() -> dict:
    return json.loads((policies_dir() / "config.schema.json").read_bytes())


@functools.lru_cache(maxsize=1)
def endpoint_names() -> frozenset[str]:
    """Every variable that says where or how a credential is sent, the trackers' included."""
    schema = json.loads((policies_dir() / "config.schema.json").read_bytes())  # not _schema(): a test swaps the file
    return _OWN_ENDPOINT_NAMES | frozenset(schema["properties"]["trackers"].get("x-endpoint-variables", ()))


def _schema_node(key_path: tuple) -> dict | None:
    """The schema of a key (None: the schema does not define it, which is its error to report, not an ask)."""
    node = _schema()
    for part in key_path:
        if isinstance(part, int):
            node = node.get("items", {})
        elif part in node.get("properties", {}):
            node = node["properties"][part]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return None
    return node


def _schema_knows(key_path: tuple) -> bool:
    return _schema_node(key_path) is not None


class Where(NamedTuple):
    """What a kind needs besides the value: the file it is in and the current directory."""

    path: Path
    cwd: Path


class Kind(NamedTuple):
    """A kind of value an untrusted file may give; ``refuse`` says why a value is an ask (None: it is not)."""

    name: str
    refuse: Callable[[Any, Where], str | None]


def _never(value: Any, at: Where) -> str | None:
    return None


def _job_variable(value: Any, at: Where) -> str | None:
    name, sep, _ = str(value).partition("=")
    name = name.strip().upper()
    if is_runner_variable(name):
        return f"sets {name.strip()}, which configures the runner itself"
    if sep and name in endpoint_names():
        return f"sets {name}, which says where or how a credential from your environment is sent"
    return None


def _env_reference(value: Any, at: Where) -> str | None:
    scheme = str(value).partition(":")[0] if isinstance(value, str) else ""
    if scheme == "env":
        return None
    what = HOST_SCHEMES.get(scheme)
    return f"is a {scheme}: reference, which {what}" if what else "is not an env: reference"


def _secret_entry(value: Any, at: Where) -> str | None:
    if isinstance(value, str) and value.strip().startswith("!"):
        return "marks a secret public (!NAME), so its value would be shown and forwarded in clear"
    return None


def _only(allowed: Any, why: str) -> Callable[[Any, Where], str | None]:
    return lambda value, at: None if value == allowed else why


def _inside_own_directory(value: Any, at: Where) -> str | None:
    """A path that stays inside the file's directory, resolved as the build resolves it
    (``~`` expanded, relative to the current directory, symlinks followed)."""
    if not isinstance(value, str) or not value:
        return None
    base = Path(os.path.realpath(at.path.parent))
    target = Path(os.path.realpath(at.cwd / os.path.expanduser(value)))
    if target == base or base in target.parents:
        return None
    return f"names a path outside the file's directory {base} (a build sends it to the builder)"


JOB = Kind("any value the schema takes (it configures the job)", _never)
JOB_VARIABLE = Kind("NAME, or NAME=value for a name that configures neither the runner (PRIMUS_RUNNER_*) "
                    "nor where or how a credential is sent", _job_variable)
ENV_REFERENCE = Kind("env:NAME (a variable you already have, under another name)", _env_reference)
SECRET_ENTRY = Kind("a secret name or pattern (never !NAME)", _secret_entry)
STDIN = Kind("stdin only (env puts every secret value in docker inspect)",
             _only("stdin", "puts every secret value in the container's Config.Env, readable with docker inspect"))
FALSE = Kind("false only", _only(False, "would let Slurm's accounting archive your job's environment, secrets included"))
INSIDE = Kind("a path inside the file's own directory", _inside_own_directory)

# The one table: every key an untrusted project file may set, and the kind of value.
ALLOWED: dict[str, Kind] = {
    "main.debug": JOB, "main.dry_run": JOB,
    **{f"slurm.{key}": JOB for key in (
        "debug", "dry_run", "partition", "nodes", "gpus_per_node", "time", "account", "master_port", "output_dir",
        "sbatch_args[]", "ntasks", "cpus-per-task", "output", "error", "job-name", "qos", "reservation", "constraint",
        "nodelist", "exclude", "mem", "gres", "mail-type", "mail-user", "exclusive")},
    "slurm.allow_env_in_accounting": FALSE,
    **{f"container.{key}": JOB for key in ("entry[]", "debug", "dry_run", "gpu", "gpus", "stop_timeout", "engine", "pull")},
    "container.secrets_via": STDIN,
    **{f"container.options.{key}": JOB for key in (
        "image", "ipc", "network", "name", "privileged", "security-opt", "group-add", "ulimit", "shm-size", "memory",
        "cpus", "user", "workdir", "hostname", "device[]", "cap-add[]", "volume[]")},
    "container.options.env[]": JOB_VARIABLE,
    **{f"direct.{key}": JOB for key in (
        "dry_run", "entry[]", "debug", "gpus_per_node", "master_port", "nnodes", "master_addr", "run_mode", "script",
        "numa", "log_file", "patch[]")},
    "direct.env[]": JOB_VARIABLE,
    "passthrough.prefixes[]": JOB, "passthrough.deny[]": JOB, "passthrough.required[]": JOB,
    "passthrough.secrets[]": SECRET_ENTRY,
    "secrets.*": ENV_REFERENCE,
    "trackers.*": JOB, "trackers.metrics.*": JOB,
    "runs.record": JOB, "runs.tracker_outputs": JOB, "runs.log_limit_mb": JOB,
    "cache.enabled": JOB,
    "images.secrets[]": JOB, "images.pull": JOB,
    "images.file": INSIDE, "images.context": INSIDE, "images.dir": INSIDE,
    "images.rocm.base": JOB, "images.rocm.tag": JOB, "images.cuda.base": JOB, "images.cuda.tag": JOB,
}
NOT_LISTED = "is not a key an untrusted project file may set (the list: docs/security.md)"
ENDPOINT = "names where a credential from your environment is sent (its tracker makes it an endpoint variable)"


def _parts(pattern: str) -> tuple[str, ...]:
    return tuple(part for piece in pattern.split(".") for part in ((piece[:-2], "[]") if piece.endswith("[]") else (piece,)))


_TABLE: dict[tuple[str, ...], Kind] = {_parts(p): kind for p, kind in ALLOWED.items()}
_SECTIONS = {parts[:depth] for parts in _TABLE for depth in range(1, len(parts))}


def _pattern_of(key_path: tuple) -> tuple | None:
    """The table's (or a section's) pattern for a concrete key path: exact keys first, then ``*``."""
    candidates = [()]
    for part in key_path:
        step = ["[]"] if isinstance(part, int) else [str(part), "*"]
        candidates = [c + (s,) for c in candidates for s in step if c + (s,) in _TABLE or c + (s,) in _SECTIONS]
        if not candidates:
            return None
    return candidates[0]


def asks(data: Any, at: Where) -> Iterable[tuple[tuple, str]]:
    """(key path, why) for everything ``data`` sets that the table does not allow."""
    stack: list[tuple[tuple, Any]] = [((), data)]
    while stack:
        key_path, node = stack.pop()
        pattern = _pattern_of(key_path) if key_path else ()
        if pattern is None:
            if _schema_knows(key_path):
                yield key_path, NOT_LISTED
        elif (_schema_node(key_path) or {}).get("x-endpoint"):  # a tracker key its job turns into an endpoint
            yield key_path, ENDPOINT
        elif pattern in _TABLE:
            why = _TABLE[pattern].refuse(node, at)
            if why is not None:
                yield key_path, why
        elif isinstance(node, dict):
            stack.extend((key_path + (key,), value) for key, value in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((key_path + (i,), value) for i, value in reversed(list(enumerate(node))))
        elif node is not None and _schema_knows(key_path):
            yield key_path, NOT_LISTED


def env_file_asks(names: Iterable[str]) -> list[str]:
    """The names an untrusted ``./.env`` may not set."""
    return [name for name in names if name.upper() in endpoint_names()]


def table() -> list[tuple[str, str]]:
    """(key pattern, kind) of every entry, as ``docs/security.md`` shows them."""
    return [(pattern, kind.name) for pattern, kind in ALLOWED.items()]
