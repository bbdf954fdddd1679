"""The build context: ``.dockerignore``, context hygiene, the tar the runner sends.

The runner makes the build context itself, as an in-memory tar of the context
directory filtered by its ``.dockerignore`` (plus, for the project's recipes,
the host's CA bundle under the fixed name ``common/ca-bundle.crt``); so it knows
every byte it sends, refuses an env file or a secret value in it, and users
behind a TLS-intercepting proxy never edit a Dockerfile. Every builder (the
Engine API's classic one, BuildKit through a CLI) gets this same tar.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import tarfile
from pathlib import Path
from typing import Iterable

from runner.errors import ConfigError, Problem
from runner.images.spec import CA_NAME, BuildSpec


MAX_DOCKERIGNORE = 1 << 20


def dockerignore(context: Path) -> list[str]:
    path = context / ".dockerignore"
    try:
        st = os.lstat(path)
    except OSError:
        return []
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(Problem(f"{path} is not a regular file", hint="make .dockerignore a plain text file"))
    with open(path, "rb") as fh:
        raw = fh.read(MAX_DOCKERIGNORE + 1)
    if len(raw) > MAX_DOCKERIGNORE:
        raise ConfigError(Problem(f"{path} is over {MAX_DOCKERIGNORE:,} bytes", hint="is this the right file?"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(Problem(".dockerignore is not valid UTF-8", where=f"{path}:{line}", hint="save it as UTF-8")) from None
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _entry_problem(context: Path, rel: str) -> str | None:
    """Why a context entry cannot be sent: never read a device or a FIFO (a read that never
    ends, or never starts), never follow a link to one or to nothing."""
    path = context / rel
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return f"{rel} cannot be examined ({exc.strerror})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        try:
            target = os.stat(path).st_mode
        except OSError:
            return f"{rel} is a symbolic link to nothing ({os.readlink(path)})"
        if not (stat.S_ISREG(target) or stat.S_ISDIR(target)):
            return f"{rel} is a symbolic link to a device, FIFO or socket"
        return None
    return f"{rel} is a device, FIFO or socket"


def _ignore_regex(pattern: str):
    """A ``.dockerignore`` pattern (Go filepath.Match plus ``**``) as a regex over a relative path."""
    pattern = os.path.normpath(pattern.lstrip("/")).replace(os.sep, "/")
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                i += 1
                out += "(?:.*/)?"
            else:
                out += ".*"
            continue
        out += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c) if c != "[" else "[")
        if c == "[":  # a character class, copied as is (``[!x]`` is Go's negation)
            j = pattern.find("]", i + 1)
            if j > i:
                body = pattern[i + 1:j]
                out = out[:-1] + "[" + ("^" + body[1:] if body.startswith("!") else body) + "]"
                i = j
        i += 1
    return re.compile(out + "(?:/.*)?$")  # a matching directory excludes what is under it


def context_files(context: Path, dockerfile: str) -> list[str]:
    """The files ``docker build`` would send, after ``.dockerignore`` (last matching rule wins, ``!`` re-includes).

    Written here rather than borrowed from the docker SDK: importing the SDK
    costs more than a cached rebuild takes. The Dockerfile and .dockerignore
    are always sent, as docker does.
    """
    rules = [(line.startswith("!"), _ignore_regex(line.removeprefix("!").strip())) for line in dockerignore(context)]
    keep_always = {dockerfile, ".dockerignore"}
    files = []
    for root, dirs, names in os.walk(context):
        dirs.sort()
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), context).replace(os.sep, "/")
            excluded = False
            for negated, regex in rules:
                if regex.match(rel):
                    excluded = not negated
            if not excluded or rel in keep_always:
                files.append(rel)
    problems = [p for p in (_entry_problem(context, rel) for rel in files) if p]
    if problems:
        raise ConfigError(Problem(f"the build context {context} holds what cannot be sent: {'; '.join(problems[:5])}"
                                  + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""),
                                  hint="remove them, or add them to .dockerignore"))
    return sorted(files)


def _content(path: Path) -> bytes:
    """What the tar carries for an entry: a link's target text (links are sent as links), else the bytes."""
    return os.readlink(path).encode("utf-8", "surrogateescape") if path.is_symlink() else path.read_bytes()


def recipe_hash(context: Path, files: Iterable[str], dockerfile_source: str | None = None) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + _content(context / name) + b"\0")
    if dockerfile_source:
        digest.update(b"Dockerfile\0" + Path(dockerfile_source).read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()


def refuse_env_file(context: Path, files: list[str], env_file: str | None) -> None:
    if not env_file:
        return
    path = Path(env_file).resolve()
    try:
        rel = path.relative_to(context).as_posix()
    except ValueError:
        return
    if rel in files:
        raise ConfigError(Problem(
            f"the build context {context} contains the env file in use ({rel}): its secrets would be sent to the daemon and could land in a layer",
            hint=f"move the env file out of {context}, or add '{rel}' to {context / '.dockerignore'}",
        ))


def refuse_secret_content(context: Path, files: list[str], masker, extra: Iterable[str] = ()) -> None:
    """A context file holding a secret value could be COPYed into a layer: refuse before sending."""
    if not masker:
        return
    paths = [(name, context / name) for name in files] + [(str(p), Path(p)) for p in extra]
    bad = [name for name, path in paths if path.is_file() and masker.contains_secret(_content(path))]
    if bad:
        raise ConfigError(Problem(f"build context file(s) contain the value of a secret in scope: {', '.join(bad)}",
                                  hint="remove the value from the files, or add them to .dockerignore; use --secret NAME with RUN --mount=type=secret,id=NAME"))


# RUN's own flags (``--mount=…``, ``--network=…``), before its command, across line continuations.
_SEP = r"(?:[ \t]+|[ \t]*\\\r?\n[ \t]*)"
_RUN_FLAGS = re.compile(rf"(?im)^([ \t]*RUN)((?:{_SEP}--\S+)+)")
_MOUNT = re.compile(rf"{_SEP}--mount=\S+")


def uses_mounts(text: str) -> bool:
    """Whether a Dockerfile has ``RUN --mount=…`` (cache or secret mounts): BuildKit syntax."""
    return any(_MOUNT.search(m.group(2)) for m in _RUN_FLAGS.finditer(text))


def strip_mounts(text: str) -> str:
    """The Dockerfile for the classic builder: ``RUN --mount=…`` options dropped.

    Only for the project's recipes, whose mounts are a pip cache and optional
    secrets (an index with credentials): without them the step does the same,
    just without the cache. A user's Dockerfile is never rewritten.
    """
    return _RUN_FLAGS.sub(lambda m: m.group(1) + _MOUNT.sub("", m.group(2)), text)


def make_context(spec: BuildSpec, classic_recipe: bool = False) -> bytes:
    """The build context as a tar: context files (plus the staged CA bundle for the project's recipes).

    Owner and mtime are normalised, so the daemon's cache sees only content
    and mode: a rebuild with nothing changed is all cache hits.
    ``classic_recipe``: send the recipe's Dockerfile without its mounts (``strip_mounts``).
    """
    context = Path(spec.context_dir)
    buffer = io.BytesIO()

    def add_bytes(name: str, data: bytes, mode: int = 0o644) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), mode, 0
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in spec.files:
            info = tar.gettarinfo(str(context / name), arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if name == spec.dockerfile and classic_recipe and info.isfile():
                add_bytes(name, strip_mounts((context / name).read_text(encoding="utf-8")).encode(), info.mode)
            elif info.isfile():
                with open(context / name, "rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
        if spec.dockerfile_source:
            add_bytes(spec.dockerfile, Path(spec.dockerfile_source).read_bytes())
        if spec.stage_ca:
            add_bytes(CA_NAME, Path(spec.ca_source).read_bytes() if spec.ca_source else b"")
    return buffer.getvalue()


def build_key(spec: BuildSpec, context_tar: bytes, base_id: str | None) -> str:
    """What decides the image's content: same key, same image (so ``.created`` is kept)."""
    fields = [spec.dockerfile, list(spec.build_args), list(spec.labels), base_id, hashlib.sha256(context_tar).hexdigest()]
    if spec.secrets:  # names only: a step's cache does not depend on a secret's value either
        fields.append(list(spec.secrets))
    blob = json.dumps(fields)
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def base_images(spec: BuildSpec) -> list[str]:
    """The images the Dockerfile builds FROM (not ``scratch``, not an earlier stage), ``ARG``s
    and build args substituted: what the runner pulls under its pull policy before building."""
    text = spec.dockerfile_path().read_text(encoding="utf-8", errors="replace")
    text = re.sub(r"\\\r?\n", " ", text)
    values = dict(spec.build_args)
    stages: set[str] = set()
    found: list[str] = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        keyword = words[0].upper()
        if keyword == "ARG" and not found and len(words) > 1:  # ARGs before the first FROM name bases
            name, _, default = words[1].partition("=")
            values.setdefault(name, default.strip('"\''))
        elif keyword == "FROM":
            args = [w for w in words[1:] if not w.startswith("--")]
            if not args:
                continue
            image = re.sub(r"\$\{?(\w+)\}?", lambda m: values.get(m.group(1), ""), args[0])
            if len(args) >= 3 and args[1].upper() == "AS":
                stages.add(args[2].lower())
            if image and image.lower() != "scratch" and image.lower() not in stages and image not in found:
                found.append(image)
    return found
