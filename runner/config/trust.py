"""The project trust boundary: a directory's own files cannot take your secrets.

A repository you just cloned brings its ``.primus.yaml``, its ``.env`` and (a Primus
checkout) ``runner/.primus.yaml``. Like ``direnv allow`` and ``mise trust``, those
files are untrusted until ``primus-runner trust`` records each by path and content
hash in the user's state directory; any change to a file needs trust again. A
pipeline that checks out its own repository says so with ``--trust-project`` or
``PRIMUS_RUNNER_TRUST_PROJECT=1``.

An untrusted file may set what the allowlist gives it (``runner.config.untrusted``:
the job's image, mounts, sizes, names to forward, public values); anything else it
sets is an ask, which stops the command until the file is trusted. ``~/.primus.yaml``,
``--config``, ``$PRIMUS_RUNNER_CONFIG`` and ``--env-file`` are the user's own.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple

from runner.config.yamlsource import dotted
from runner.errors import Problem

TRUST_ENV = "PRIMUS_RUNNER_TRUST_PROJECT"
STORE_NAME = "trusted.json"
HINT = "review it, then run: primus-runner trust (a pipeline: --trust-project)"


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
    """The file's own path: a symlink is not the file it points to (trusting another
    repository's file trusts nothing here)."""
    return os.path.abspath(path)


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


# ------------------------------------------------------------------ what an untrusted file asks for


class Ask(NamedTuple):
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
    """Everything a config file ``path`` (parsed as ``data``) sets that the allowlist
    (``runner.config.untrusted.ALLOWED``) does not give an untrusted file. ``where(key_path)``
    gives ``file:line``."""
    from runner.config import untrusted  # only for a project file nobody has trusted

    at = untrusted.Where(path, cwd or Path.cwd())
    return [Ask(dotted(key_path), what, where(key_path)) for key_path, what in untrusted.asks(data, at)]


def env_file_asks(names: Iterable[str], lines: Mapping[str, int], path: Path) -> list[Ask]:
    """An untrusted ``./.env`` may hold values, but not say where or how your credentials go."""
    from runner.config import untrusted

    return [Ask(name, "sets where or how a credential from your environment is sent", f"{path}:{lines.get(name, 1)}")
            for name in untrusted.env_file_asks(names)]


def env_file_problems(names: Iterable[str], lines: Mapping[str, int], path: Path) -> list[Problem]:
    return [ask.problem(path) for ask in env_file_asks(names, lines, path)]

