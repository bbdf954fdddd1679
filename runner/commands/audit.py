"""``primus-runner audit``: look for the secrets in scope where they must never be.

The scan IS the scope's masker (``Masker.matches``: the plain value, base64 at
every alignment, URL and JSON forms, each mapped back to the NAMES that produce
it) in one Aho-Corasick pass, so audit and masking can never disagree about
what a leak is. A finding names the secret and the place; the value is
never printed (and every line still goes through the output masker).
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from runner.errors import ConfigError, EngineUnavailable, UsageError
from runner.options import Sources
from runner.secrets import SecretScope
from runner.plan import LABEL

CHUNK = 1 << 20  # files are streamed in 1 MiB chunks, with an overlap of the longest pattern
MANAGED = f"{LABEL}=true"  # the runner's containers
NL = b"\n"


@dataclass(frozen=True)
class Finding:
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


def audit_container(container_id: str, scope: Any) -> list[Finding]:
    """Scan ``docker inspect`` of a container: ``Config.Env[i]``, ``Args``, ``Config.Cmd``, labels, ...

    ``up --audit`` calls this right after the container starts.
    """
    from urllib.parse import quote

    from runner.engines.docker.commands import engine

    info = engine().request("GET", f"/containers/{quote(container_id, safe='')}/json")
    return Scanner.of(scope).scan_object(info, "")


def audit_image(image: str, scope: Any, layers: bool = True) -> list[Finding]:
    """Scan an image's config, labels and history, and (``layers``) every file in every layer."""
    from urllib.parse import quote

    from runner.engines.docker.commands import engine

    scanner = Scanner.of(scope)
    eng = engine()
    ref = quote(image, safe="")
    found = scanner.scan_object(eng.request("GET", f"/images/{ref}/json"), "")
    for i, entry in enumerate(eng.request("GET", f"/images/{ref}/history") or []):
        for key, value in entry.items():
            found += scanner.scan_object(value, f"history[{i}].{_snake(key)}")
    if layers:
        found += _scan_image_layers(eng.stream(f"/images/{ref}/get"), scanner)
    return found


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(key))


class _ChunkReader(io.RawIOBase):
    """A file object over the chunk iterator of ``docker save``, read once, front to back."""

    def __init__(self, chunks: Iterator[bytes]):
        self._chunks = chunks
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def _scan_image_layers(chunks: Iterator[bytes], scanner: Scanner) -> list[Finding]:
    """Every file of every layer of a ``docker save`` stream."""
    found: list[Finding] = []
    raw = io.BufferedReader(_ChunkReader(chunks), CHUNK)
    with tarfile.open(fileobj=raw, mode="r|") as outer:
        for member in outer:
            if not member.isfile():
                continue
            fh = outer.extractfile(member)
            if member.name.endswith(".tar"):  # a layer: scan each file in it
                layer = member.name.split("/")[0][:12]
                with tarfile.open(fileobj=fh, mode="r|") as inner:
                    for item in inner:
                        for name in scanner.names_in(item.name.encode("utf-8", "surrogateescape")):
                            found.append(Finding(name, f"layer {layer}:{item.name} (file name)"))
                        if item.isfile():
                            found += scanner.scan_stream(inner.extractfile(item), f"layer {layer}:{item.name}")
            else:  # manifest, image config: already covered by inspect, but cheap
                found += scanner.scan_stream(fh, f"image archive:{member.name}")
    return found


def runner_state_dirs() -> list[Path]:
    """Where the runner itself writes: its cache/state dir, and ``./primus-runs`` if present."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    dirs = [base / "primus-runner"]
    runs = Path.cwd() / "primus-runs"
    if runs.exists():
        dirs.append(runs)
    return [d for d in dirs if d.exists()]


# ------------------------------------------------------------------ command

def audit_scope(sources: Sources, out) -> SecretScope:
    """Every secret the runner would know now: the host's and the env file's.

    A broken config must not stop an audit (a leak is worse than a typo), so on a
    config error the built-in secret names and patterns are used and the problem
    is a warning.
    """
    from runner.ui import ci
    from runner.session.prepare import load_context

    try:
        scope = load_context(sources, out=out).scope  # secret references resolved too
    except ConfigError as exc:
        scope = ci.early_scope(Sources(None, sources.env_file))
        out.use_masker(scope.masker)
        out.warn(f"config problem ({exc.message.splitlines()[0]}); auditing with the built-in secret names and patterns")
    out.use_masker(scope.masker)
    return scope


def cmd_audit(targets: Sequence[str], sources: Sources, out) -> int:
    """``primus-runner audit [TARGET…]``: exit 0 clean, 4 when any secret is found."""
    scope = audit_scope(sources, out)
    if not scope:
        out.warn("no secrets in scope (none of the secret names is set in the environment or the env file); nothing to look for")
    scanner = Scanner(scope)
    findings: list[Finding] = []
    scanned: list[str] = []
    if not targets:
        from runner.engines.docker.commands import engine

        try:
            for c in engine().containers([MANAGED]):
                cid = c["Id"][:12]
                name = (c.get("Names") or [cid])[0].lstrip("/")
                findings += [Finding(f.secret, f"container {name}: {f.location}") for f in audit_container(cid, scanner)]
                scanned.append(f"container {name}")
        except EngineUnavailable as exc:
            out.warn(f"{exc.message}: containers not audited")
        paths = runner_state_dirs()
        findings += audit_paths(paths, scanner)
        scanned += [str(p) for p in paths]
    problems: list[str] = []
    for target in targets:
        if os.path.lexists(target) or _names_a_path(target):
            findings += audit_paths([target], scanner, problems)
        else:
            findings += _audit_engine_object(target, scanner)
        scanned.append(target)

    findings = list(dict.fromkeys(findings))  # drop exact duplicates, keep order
    clean = not findings and not problems
    if out.json_mode:
        report = {"clean": clean, "findings": [f.to_dict() for f in findings], "scanned": scanned, "secrets": scope.names()}
        out.json({**report, "errors": problems} if problems else report)
    else:
        for finding in findings:
            out.result(str(finding))
    for problem in problems:
        out.error(f"not audited: {problem}")
    if problems and not findings:
        out.error(f"{len(problems)} target(s) could not be read: the audit is not clean",
                  "give paths audit can read (run it as a user who can), or leave those out")
        return 2
    if clean:
        out.info(f"clean: {len(scope.names())} secret(s) in scope, none found in {len(scanned)} target(s)")
        return 0
    leaked = sorted({f.secret for f in findings})
    out.error(
        f"{len(findings)} leak(s) of {', '.join(leaked)}",
        "remove them (docker rm / delete the files) and rotate the leaked secrets",
    )
    return 4


def _names_a_path(target: str) -> bool:
    """``./missing``, ``/x``, ``~/y``: a path even when nothing is there (never a container or image)."""
    return target in (".", "..") or target.startswith(("/", "./", "../", "~"))


def _audit_engine_object(target: str, scanner: Scanner) -> list[Finding]:
    from urllib.parse import quote

    from runner.clients.engine_api import ApiError
    from runner.engines.docker.commands import engine

    try:
        info = engine().request("GET", f"/containers/{quote(target, safe='')}/json")
        name = info.get("Name", target).lstrip("/")
        return [Finding(f.secret, f"container {name}: {f.location}") for f in scanner.scan_object(info, "")]
    except ApiError as exc:
        if exc.status != 404:
            raise UsageError(f"cannot inspect {target}: {exc.message}") from None
    try:
        return [Finding(f.secret, f"image {target}: {f.location}") for f in audit_image(target, scanner)]
    except ApiError as exc:
        if exc.status == 404:
            raise UsageError(
                f"'{target}' is not a file, directory, container or image",
                hint="give a path, a container name/id (primus-runner ps) or an image name",
            ) from None
        raise UsageError(f"cannot inspect {target}: {exc.message}") from None
