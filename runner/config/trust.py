"""The project trust boundary: a directory's own files cannot take your secrets.

A repository you just cloned brings its ``.primus.yaml``, its ``.env`` and (a Primus
checkout) ``runner/.primus.yaml``. Like ``direnv allow`` and ``mise trust``, those
files are untrusted until ``primus-runner trust`` records each by path and content
hash in the user's state directory; any change to a file needs trust again. A
pipeline that checks out its own repository says so with ``--trust-project`` or
``PRIMUS_RUNNER_TRUST_PROJECT=1``.

An untrusted file may still list names, options and public values. What it may not
do is listed in ``untrusted_problems``: each is a way for the file's author to reach
a credential from *your* environment (run a program or read a file on your host,
send a token to a host they chose, unmark a secret, ship your home directory to a
build, archive your environment in Slurm's accounting). ``~/.primus.yaml``,
``--config``, ``$PRIMUS_RUNNER_CONFIG`` and ``--env-file`` are the user's own.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from runner.errors import Problem
from runner.records import dataclass
from runner.resources import policies_dir

TRUST_ENV = "PRIMUS_RUNNER_TRUST_PROJECT"
STORE_NAME = "trusted.json"
HINT = "review it, then run: primus-runner trust (a pipeline: --trust-project)"

# References that run a program, read a file or ask a store on this host (env: only renames).
HOST_SCHEMES = ("cmd", "file", "pass", "aws-sm")
# Variables that say where a credential from your environment is sent: these, and each
# tracker's (its SETTINGS.endpoints, listed in the schema's trackers section: endpoint_names).
_OWN_ENDPOINT_NAMES = frozenset({
    "HF_ENDPOINT", "DOCKER_LOGIN_REGISTRY",
    "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SECRETS_MANAGER",
})
# Config keys that name such an endpoint: tracker URIs and hosts, registries.
_ENDPOINT_KEY = re.compile(r"(^|[_-])(uri|url|host|endpoint|registry|registries)$", re.IGNORECASE)
# docker run options that reroute the job's names or read a host file into its environment.
_CONTAINER_OPTIONS = {"add-host": "points host names at addresses it chose",
                      "dns": "points the job's name lookups at a server it chose",
                      "env-file": "reads a file of this host into the job's environment"}
_PATH_KEYS = ("context", "file", "dir")  # images.*: a build sends what they name to the builder


@functools.lru_cache(maxsize=1)
def endpoint_names() -> frozenset[str]:
    """Every variable that says where a credential is sent, the trackers' included (generated
    into the schema from each tracker's declaration: this layer is below the trackers)."""
    schema = json.loads((policies_dir() / "config.schema.json").read_bytes())
    return _OWN_ENDPOINT_NAMES | frozenset(schema["properties"]["trackers"].get("x-endpoint-variables", ()))


def forced(flag: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    """``--trust-project`` or ``PRIMUS_RUNNER_TRUST_PROJECT=1``: trust the project's files as they are."""
    value = (os.environ if environ is None else environ).get(TRUST_ENV, "")
    return flag or value.strip().lower() in ("1", "true", "yes", "on")


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "primus-runner"


def store_path() -> Path:
    return state_dir() / STORE_NAME


def _key(path: Path) -> str:
    return os.path.realpath(path)


def _read_store() -> dict[str, dict]:
    try:
        doc = json.loads(store_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = doc.get("files") if isinstance(doc, dict) else None
    return {k: v for k, v in files.items() if isinstance(v, dict)} if isinstance(files, dict) else {}


def is_trusted(path: Path, content_digest: str) -> bool:
    """Recorded by ``trust`` with exactly this content."""
    entry = _read_store().get(_key(path))
    return entry is not None and entry.get("sha256") == content_digest


def status(path: Path, content_digest: str) -> str:
    """trusted | changed (trusted once, edited since) | untrusted."""
    entry = _read_store().get(_key(path))
    if entry is None:
        return "untrusted"
    return "trusted" if entry.get("sha256") == content_digest else "changed"


def record(files: Iterable[tuple[Path, str]], revoke: bool = False) -> Path:
    """Trust (or forget) each (path, digest); the store is replaced atomically, 0600."""
    entries = _read_store()
    for path, content_digest in files:
        if revoke:
            entries.pop(_key(path), None)
        else:
            entries[_key(path)] = {"sha256": content_digest, "trusted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    target = store_path()
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".trusted-", dir=target.parent)  # mkstemp: 0600 from the start
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"version": 1, "files": entries}, fh, indent=2, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


# ------------------------------------------------------------------ what an untrusted file may not do


@dataclass(frozen=True)
class Ask:
    """One thing a project file asks for that only the user may: the key, why, ``file:line``."""

    key: str
    what: str
    where: str | None

    def problem(self, path: Path | str) -> Problem:
        return Problem(f"{self.key} in the untrusted project file {path} {self.what}", where=self.where, hint=HINT)


def untrusted_problems(data: Any, path: Path, where, cwd: Path | None = None) -> list[Problem]:
    """Each ask of an untrusted config file, as the problem that stops the command."""
    return [ask.problem(path) for ask in untrusted_asks(data, path, where, cwd)]


def untrusted_asks(data: Any, path: Path, where, cwd: Path | None = None) -> list[Ask]:
    """Everything a config file ``path`` (parsed as ``data``) asks for that only the user
    may ask for. ``where(key_path)`` gives ``file:line``."""
    if not isinstance(data, dict):
        return []
    problems: list[Ask] = []

    def refuse(key_path: tuple, what: str) -> None:
        problems.append(Ask(_dotted(key_path), what, where(key_path)))

    secrets = data.get("secrets")
    if isinstance(secrets, dict):
        for name, source in secrets.items():
            scheme = str(source).partition(":")[0] if isinstance(source, str) else ""
            if scheme in HOST_SCHEMES:
                what = {"cmd": "runs a program on this host", "file": "reads a file of this host",
                        "pass": "reads your password store", "aws-sm": "reads your AWS Secrets Manager"}[scheme]
                refuse(("secrets", name), f"is a {scheme}: reference, which {what}")
    for section, env_path in (("container", ("container", "options", "env")), ("direct", ("direct", "env"))):
        entries = _get(data, env_path)
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            name, sep, _ = str(entry).partition("=")
            if sep and name.strip().upper() in endpoint_names():
                refuse(env_path + (i,), f"sets {name.strip()}, where a credential from your environment is sent")
    _endpoint_keys(data, (), refuse)
    options = _get(data, ("container", "options"))
    for option, what in _CONTAINER_OPTIONS.items():
        if isinstance(options, dict) and options.get(option) not in (None, [], ""):
            refuse(("container", "options", option), what)
    listed = _get(data, ("passthrough", "secrets"))
    for i, entry in enumerate(listed if isinstance(listed, list) else []):
        if isinstance(entry, str) and entry.strip().startswith("!"):
            refuse(("passthrough", "secrets", i), "marks a secret public (!NAME), so its value would be shown and forwarded in clear")
    images = data.get("images")
    if isinstance(images, dict):
        base = Path(os.path.realpath(path.parent))
        for key in _PATH_KEYS:
            value = images.get(key)
            if isinstance(value, str) and value and not _inside(value, base, cwd or Path.cwd()):
                refuse(("images", key), f"names a path outside the file's directory {base} (a build sends it to the builder)")
    if _get(data, ("slurm", "allow_env_in_accounting")) is True:
        refuse(("slurm", "allow_env_in_accounting"), "would let Slurm's accounting archive your job's environment, secrets included")
    return problems


def env_file_asks(names: Iterable[str], lines: Mapping[str, int], path: Path) -> list[Ask]:
    """An untrusted ``./.env`` may hold values, but not say where your credentials go."""
    return [Ask(name, "sets where a credential from your environment is sent", f"{path}:{lines.get(name, 1)}")
            for name in names if name.upper() in endpoint_names()]


def env_file_problems(names: Iterable[str], lines: Mapping[str, int], path: Path) -> list[Problem]:
    return [ask.problem(path) for ask in env_file_asks(names, lines, path)]


def _endpoint_keys(node: Any, key_path: tuple, refuse) -> None:
    """Keys such as ``trackers.mlflow_tracking_uri``, ``wandb_host``, ``images.registry``."""
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        child = key_path + (key,)
        if child == ("container", "options"):  # docker run's own options: see _CONTAINER_OPTIONS
            continue
        if _ENDPOINT_KEY.search(str(key)) and value not in (None, "", [], {}):
            refuse(child, "names an endpoint, where a credential from your environment is sent")
        elif isinstance(value, dict):
            _endpoint_keys(value, child, refuse)


def _inside(value: str, base: Path, cwd: Path) -> bool:
    """A path that stays inside ``base``, resolved as the build resolves it (``~`` expanded,
    relative to the current directory, symlinks followed)."""
    target = Path(os.path.realpath(cwd / os.path.expanduser(value)))
    return target == base or base in target.parents


def _get(data: Any, key_path: tuple) -> Any:
    for key in key_path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _dotted(key_path: tuple) -> str:
    out = ""
    for part in key_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
