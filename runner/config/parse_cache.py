"""Parsed config files, remembered by the hash of their text: a file read again unchanged is not
parsed again, and PyYAML (a quarter of `plan`'s start-up when imported) is not even loaded.

An entry is the parse's result (the data and every ``file:line``) as JSON, named by the sha256
of the file's path and text, in the user's cache directory (0700), beside the schema verdicts.
A file the user writes is remembered only once the command has accepted it (``Pending``,
stored by ``Config.settle``): a refused file may hold a secret value (a literal the runner
refuses, a token pasted in place of a name) that the user is about to remove, and a copy here
would outlive the fix. A file with an error is parsed, and reported, every time. Whatever JSON
cannot give back exactly (a mapping with non-string keys, a date, bytes) is not stored.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

FORMAT = 1  # bump when the parser's result changes for the same text
MAX_ENTRY = 1 << 20  # a config's result is small; a huge one (aliases expanded) is parsed each time


def _dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "primus-runner" / "parsed"


def _entry(source: str, text: str) -> Path:
    key = hashlib.sha256(f"{FORMAT}\0{source}\0".encode() + text.encode("utf-8", "surrogateescape")).hexdigest()
    return _dir() / key


def recall(source: str, text: str) -> tuple[object, dict] | None:
    """(data, lines) of a successful earlier parse of exactly this text at this path, else None."""
    try:
        doc = json.loads(_entry(source, text).read_bytes())
        if doc.get("format") != FORMAT or doc.get("source") != source:
            return None
        return doc["data"], {tuple(path): where for path, where in doc["lines"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # absent or unreadable: parse


def _exact(value) -> bool:
    """JSON gives ``value`` back unchanged (the types a YAML file's data can hold that it keeps)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, list):
        return all(_exact(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _exact(v) for k, v in value.items())
    return False


class Pending:
    """A parse to store once the config it belongs to is accepted, serialized when it was parsed."""

    def __init__(self, entry: Path, blob: bytes):
        self.entry, self.blob = entry, blob

    def store(self) -> None:
        """Write the entry (never fails: a read-only home only costs speed)."""
        try:
            self.entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = self.entry.with_name(f"{self.entry.name}.{os.getpid()}.tmp")
            tmp.write_bytes(self.blob)
            os.replace(tmp, self.entry)  # whole or not at all: a reader never sees half an entry
        except OSError:
            pass


def pending(source: str, text: str, data, lines: dict) -> Pending | None:
    """A successful parse, ready to store; None when JSON cannot give it back exactly or it is huge."""
    if not _exact(data) or not all(isinstance(p, (str, int)) and not isinstance(p, bool) for path in lines for p in path):
        return None
    blob = json.dumps({"format": FORMAT, "source": source, "data": data, "lines": [[list(p), w] for p, w in lines.items()]},
                      allow_nan=True).encode()
    return Pending(_entry(source, text), blob) if len(blob) <= MAX_ENTRY else None
