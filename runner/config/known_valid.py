"""Config layers known to pass the schema: their digests, never their content.

A layer's digest covers the runner's version, the schema's bytes and the layer's parsed data,
so a schema problem (a pure function of those) cannot hide behind it: a changed file, schema
or runner is a new digest and is validated again. A known layer is not validated again, and a
command whose layers are all known does not import jsonschema.

Only a real launch records (``remember``, from the pipeline once the job has started): ``plan``,
every dry run and ``check`` read here and write nothing. The directory holds empty files named by
digest, ``$XDG_CACHE_HOME/primus-runner/valid-config/<sha256>``; deleting it costs one validation.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Iterable

import runner


def directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"  # XDG: a relative value is ignored
    return root / "primus-runner" / "valid-config"


def digest(schema: bytes, data: Any) -> str:
    """The layer's digest. ``repr`` of parsed YAML data is exact and stable (``1`` is not ``'1'``,
    ``True`` is not ``1``, key order is the file's), which ``json.dumps`` is not."""
    h = hashlib.sha256(runner.__version__.encode())
    h.update(b"\0" + hashlib.sha256(schema).digest() + b"\0")
    h.update(repr(data).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def is_known(layer_digest: str) -> bool:
    """Listed, in a directory only this user could have written: a digest another user planted
    (a shared or world-writable ``XDG_CACHE_HOME``) would let a file skip the schema."""
    where = directory()
    try:
        info = where.stat()
    except OSError:
        return False
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        return False
    return (where / layer_digest).is_file()


def remember(digests: Iterable[str]) -> None:
    """Record layers that passed the schema. Best effort: a cache that cannot be written (a full
    disk, a read-only home) only means the next command validates again."""
    digests = [d for d in digests if not is_known(d)]
    if not digests:
        return
    try:
        where = directory()
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        for layer_digest in digests:
            os.close(os.open(where / layer_digest, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    except OSError:
        pass
