"""The leak scanner: the secrets in scope found in data, files and JSON-like objects.

The scan IS the scope's masker (``Masker.matches``: the plain value, base64 at
every alignment, URL and JSON forms, each mapped back to the NAMES that produce
it) in one Aho-Corasick pass, so audit and masking can never disagree about
what a leak is. A finding names the secret and the place, never the value.
Engines scan what they made (a container's inspect data, a job's files) with
it; ``primus-runner audit`` scans what it is given.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

from runner.secrets.scope import SecretScope

CHUNK = 1 << 20  # files are streamed in 1 MiB chunks, with an overlap of the longest pattern
NL = b"\n"


class Finding(NamedTuple):
    """One leak: the secret's NAME and where it was found, never its value."""

    secret: str
    location: str

    def to_dict(self) -> dict:
        return {"secret": self.secret, "location": self.location}

    def __str__(self) -> str:
        return f"{self.secret} at {self.location}"


class Scanner:
    """Finds secrets in data with the scope's own masker (one automaton, names included)."""

    def __init__(self, scope: SecretScope):
        self._masker = scope.masker
        self.max_len = scope.masker.max_len

    @classmethod
    def of(cls, scope: Any) -> "Scanner":
        """A Scanner, a ``SecretScope``, or something that has one (``Planned``, ``RunContext``)."""
        if isinstance(scope, Scanner):
            return scope
        if isinstance(scope, SecretScope):
            return cls(scope)
        return cls(scope.scope)

    def __bool__(self) -> bool:
        return bool(self._masker)

    def matches(self, data: bytes) -> Iterator[tuple[str, int, int]]:
        """(name, start, end) for every occurrence of every encoding in ``data``."""
        return self._masker.matches(data)

    def names_in(self, data: bytes) -> list[str]:
        return sorted({name for name, _, _ in self.matches(data)})

    # ------------------------------------------------------------ structures
    def scan_object(self, obj: Any, path: str) -> list[Finding]:
        """Walk a JSON-like object (``docker inspect``); keys are checked as well as values."""
        found: list[Finding] = []
        if isinstance(obj, dict):
            for key, value in obj.items():
                child = f"{path}.{key}" if path else str(key)
                for name in self.names_in(str(key).encode("utf-8", "surrogateescape")):
                    found.append(Finding(name, f"{child} (key)"))
                found += self.scan_object(value, child)
        elif isinstance(obj, list):
            for i, value in enumerate(obj):
                found += self.scan_object(value, f"{path}[{i}]")
        elif obj is not None:
            text = obj if isinstance(obj, str) else str(obj)
            found += [Finding(name, path or "(value)") for name in self.names_in(text.encode("utf-8", "surrogateescape"))]
        return found

    # ------------------------------------------------------------ streams
    def scan_stream(self, fh, label: str) -> list[Finding]:
        """Scan a binary stream in chunks; ``label:line`` for text, ``label@offset`` for binary.

        Consecutive chunks overlap by ``max_len - 1`` bytes, so a value split by
        a chunk boundary is found; a match lying wholly in the overlap was
        already reported with the previous chunk and is skipped.
        """
        if not self:
            return []
        found: dict[tuple[str, str], Finding] = {}
        keep = self.max_len - 1
        tail = b""
        base = 0  # file offset of tail[0]
        line = 1  # line number at tail[0]
        binary = False
        first = True
        while True:
            chunk = fh.read(CHUNK)
            if not chunk:
                break
            if first:
                binary = b"\x00" in chunk[:8192]
                first = False
            data = tail + chunk
            for name, start, end in self.matches(data):
                if end <= len(tail):
                    continue  # already seen in the previous window
                where = f"{label}@{base + start}" if binary else f"{label}:{line + data.count(NL, 0, start)}"
                found.setdefault((name, where), Finding(name, where))
            cut = max(len(data) - keep, 0)
            line += data.count(NL, 0, cut)
            base += cut
            tail = data[cut:]
        return list(found.values())


# ------------------------------------------------------------------ targets

def audit_paths(paths: Iterable[str | os.PathLike], scope: Any, problems: list[str] | None = None) -> list[Finding]:
    """Scan files and directories (recursively); symlinks and special files are not followed.

    Used by ``submit --audit`` on the job's output directory and rendered script.
    ``problems``, when given, collects what could not be read (a missing or
    unreadable target, a symlink given as a target): never clean, an error.
    """
    scanner = Scanner.of(scope)
    found: list[Finding] = []
    note = problems.append if problems is not None else (lambda message: None)
    for path in paths:
        for file in _walk(Path(path), note):
            for name in scanner.names_in(os.fsencode(file)):
                found.append(Finding(name, f"{file} (file name)"))
            try:
                with open(file, "rb") as fh:
                    found += scanner.scan_stream(fh, str(file))
            except OSError as exc:
                note(f"{file}: cannot be read ({exc.strerror or type(exc).__name__})")
    return found


def _walk(path: Path, note) -> Iterator[Path]:
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        note(f"{path}: {exc.strerror or 'cannot be examined'}")
        return
    if stat.S_ISREG(mode):
        yield path
    elif stat.S_ISDIR(mode):
        def unreadable(exc: OSError) -> None:
            note(f"{exc.filename}: cannot be read ({exc.strerror or type(exc).__name__})")

        for root, dirs, files in os.walk(path, followlinks=False, onerror=unreadable):
            dirs.sort()
            for name in sorted(files):
                file = Path(root) / name
                try:
                    if stat.S_ISREG(os.lstat(file).st_mode):  # never block on a FIFO or follow a link
                        yield file
                except OSError:
                    continue
    elif stat.S_ISLNK(mode):
        note(f"{path}: is a symbolic link, which audit does not follow (give the file it points to)")
    else:
        note(f"{path}: is not a regular file or directory")
