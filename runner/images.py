"""``primus-runner build``: training images from ``images/<flavor>/`` with no secret baked in.

The build is resolved first (``resolve_build``: context files, build args,
labels, the CA bundle to stage) without touching the daemon, so ``--dry-run``
prints exactly what would be sent. The runner makes the build context itself,
as an in-memory tar of the recipe directory filtered by its ``.dockerignore``
plus the host's CA bundle under the fixed name ``common/ca-bundle.crt``; so it
knows every byte it sends, refuses an env file or a secret value in it, and
users behind a TLS-intercepting proxy never edit a Dockerfile.

Secret safety, in order: a build arg whose NAME is a secret, whose value holds
a secret in scope, or a URL with a password, is refused (exit 2) before the
daemon is contacted — build args are recorded in the image history. After the
build the image's config and history are scanned for every secret in scope;
a hit removes the image and fails the build with exit 3 (``build`` is a
run-time command: the contract gives it 0/2/3; ``audit`` owns exit 4).
"""

from __future__ import annotations

import configparser
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping

from runner import __version__
from runner.errors import ConfigError, EngineUnavailable, Problem, RuntimeFailure, UsageError
from runner.ui import Output

FLAVORS = ("rocm", "cuda")
DEFAULT_BASES = {"rocm": "rocm/primus:v26.5", "cuda": "nvcr.io/nvidia/pytorch:25.01-py3"}
DEFAULT_TAG = "primus-runner/{flavor}:{version}"
CA_NAME = "common/ca-bundle.crt"  # fixed name the Dockerfiles COPY; public data, never a secret
SYSTEM_CA = "/etc/ssl/certs/ca-certificates.crt"
CA_ENV = ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")
# pip settings that make sense inside a build container (host paths do not).
PIP_KEYS = {"index-url": "PIP_INDEX_URL", "extra-index-url": "PIP_EXTRA_INDEX_URL", "trusted-host": "PIP_TRUSTED_HOST", "default-timeout": "PIP_DEFAULT_TIMEOUT", "timeout": "PIP_DEFAULT_TIMEOUT"}
# Docker's predefined proxy args: honoured by RUN steps, left out of the history.
PROXY_ARGS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "FTP_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "ftp_proxy", "all_proxy")

L_SOURCE = "org.opencontainers.image.source"
L_REVISION = "org.opencontainers.image.revision"
L_CREATED = "org.opencontainers.image.created"
L_BASE = "org.opencontainers.image.base.name"
L_FLAVOR = "io.primus-runner.flavor"
L_VERSION = "io.primus-runner.version"
L_RECIPE = "io.primus-runner.recipe-hash"
L_BUILD_KEY = "io.primus-runner.build-key"


@dataclass(frozen=True)
class BuildSpec:
    """Everything a build will do, decided before the daemon is contacted."""

    flavor: str
    context_dir: str
    dockerfile: str  # relative to context_dir
    base: str
    tag: str
    build_args: tuple[tuple[str, str], ...]
    labels: tuple[tuple[str, str], ...]  # without .created (set when the build runs)
    files: tuple[str, ...]  # context members, relative, after .dockerignore
    ca_source: str | None
    recipe_hash: str
    no_cache: bool = False
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "flavor": self.flavor,
            "context": self.context_dir,
            "dockerfile": self.dockerfile,
            "base": self.base,
            "tag": self.tag,
            "build_args": dict(self.build_args),
            "labels": {**dict(self.labels), L_CREATED: "(set when built)"},
            "ca_bundle": {"source": self.ca_source, "staged_as": CA_NAME},
            "files": list(self.files),
            "no_cache": self.no_cache,
            "notes": list(self.notes),
        }


@dataclass
class BuildResult:
    image_id: str
    tag: str
    flavor: str
    labels: dict[str, str]
    steps: int = 0
    cache_hits: int = 0
    ran: int = 0
    seconds: float = 0.0
    log: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"image_id": self.image_id, "tag": self.tag, "flavor": self.flavor, "labels": self.labels, "cache_hits": self.cache_hits, "steps": self.steps, "ran": self.ran}


# ------------------------------------------------------------------ resolve

def recipes_dir(config) -> Path:
    """``images.dir`` from config (a directory with ``<flavor>/Dockerfile``), else the shipped recipes."""
    from runner.resources import images_dir

    custom = config.get("images", "dir") if config is not None else None
    return Path(custom).expanduser().resolve() if custom else images_dir()


def default_flavor(config) -> str:
    gpu = config.get("container", "gpu") if config is not None else None
    return gpu if gpu in FLAVORS else "rocm"


def parse_build_args(specs: Iterable[str], host_env: Mapping[str, str]) -> list[tuple[str, str]]:
    """``K=V`` pairs; a bare ``K`` takes the host's value, like ``docker build``."""
    pairs: list[tuple[str, str]] = []
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not key or not key.replace("_", "a").isalnum():
            raise UsageError(f"--build-arg '{key or spec}' is not NAME=VALUE", hint="e.g. --build-arg TRACKERS=mlflow-skinny")
        if not sep:
            if key not in host_env:
                raise UsageError(f"--build-arg {key} has no value and {key} is not set", hint=f"give it as --build-arg {key}=VALUE")
            value = host_env[key]
        pairs.append((key, value))
    return pairs


def _url_has_password(value: str) -> bool:
    for part in value.split():
        try:
            parsed = urllib.parse.urlsplit(part)
        except ValueError:
            continue
        if parsed.scheme and parsed.netloc and "@" in parsed.netloc and parsed.password:
            return True
    return False


def check_build_args(pairs: list[tuple[str, str]], classifier, masker) -> None:
    """Refuse every build arg that would record a secret in the image history (exit 2, all at once)."""
    problems: list[Problem] = []
    instead = "pass secrets at run time (list the NAME in container.options.env; the value comes from your shell or .env); BuildKit secrets are not available with the classic builder"
    for key, value in pairs:
        if classifier.is_secret(key):
            problems.append(Problem(f"--build-arg {key}: {key} is classified secret; build args are recorded in the image history", hint=instead))
        elif masker and masker.contains_secret(value.encode("utf-8", "surrogateescape")):
            problems.append(Problem(f"--build-arg {key}: its value contains the value of a secret in scope", hint=instead))
        elif _url_has_password(value):
            problems.append(Problem(f"--build-arg {key}: the URL embeds a password, which would be recorded in the image history", hint="use an index without credentials (a proxy or mirror on the build host), or install private packages at run time"))
    if problems:
        raise ConfigError(problems)


def _pip_config_files(home: Path, host_env: Mapping[str, str]) -> list[Path]:
    """pip's own config search order, lowest first (site config is skipped: no venv here).

    ``PIP_CONFIG_FILE=/dev/null`` means no config file at all, as for pip itself.
    """
    if host_env.get("PIP_CONFIG_FILE") == os.devnull:
        return []
    xdg_dirs = host_env.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    files = [Path(d) / "pip" / "pip.conf" for d in reversed(xdg_dirs) if d]
    files += [Path("/etc/pip.conf"), home / ".pip" / "pip.conf", Path(host_env.get("XDG_CONFIG_HOME") or home / ".config") / "pip" / "pip.conf"]
    if host_env.get("PIP_CONFIG_FILE") and host_env["PIP_CONFIG_FILE"] != os.devnull:
        files.append(Path(host_env["PIP_CONFIG_FILE"]))
    return files


def host_pip_settings(host_env: Mapping[str, str], home: Path | None = None) -> tuple[dict[str, str], str | None, list[str]]:
    """(build args, CA file, notes) from the host's pip config and environment.

    Only settings that work inside the build container are forwarded: http(s)
    index URLs, trusted hosts, timeouts. Host paths (``file://`` indexes,
    ``find-links``, constraint files) cannot be reached from a build and are
    left out with a note; an index URL with a password is left out with a
    warning (it would be recorded in the image history).
    """
    home = home or Path.home()
    merged: dict[str, str] = {}
    origin: dict[str, str] = {}
    for path in _pip_config_files(home, host_env):
        parser = configparser.RawConfigParser()
        try:
            if not parser.read(path, encoding="utf-8"):
                continue
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in ("global", "install"):
            if parser.has_section(section):
                for key, value in parser.items(section):
                    merged[key] = value.strip()
                    origin[key] = str(path)
    for key in list(PIP_KEYS) + ["cert"]:
        env = "PIP_" + key.upper().replace("-", "_")
        if host_env.get(env):
            merged[key] = host_env[env]
            origin[key] = f"${env}"
    args: dict[str, str] = {}
    notes: list[str] = []
    for key, arg in PIP_KEYS.items():
        if key not in merged or not merged[key]:
            continue
        value = " ".join(merged[key].split())
        if key.endswith("url"):
            urls = value.split()
            remote = [u for u in urls if u.startswith(("http://", "https://"))]
            if len(remote) < len(urls):
                notes.append(f"pip {key} from {origin[key]}: host-local entries are not reachable from a build and are left out")
            if any(_url_has_password(u) for u in remote):
                notes.append(f"warning: pip {key} from {origin[key]} embeds a password; not forwarded (it would be recorded in the image history)")
                continue
            value = " ".join(remote)
        if value:
            args[arg] = value
    ca = None
    for candidate in (host_env.get("PIP_CERT"), merged.get("cert"), host_env.get("REQUESTS_CA_BUNDLE"), host_env.get("SSL_CERT_FILE"), SYSTEM_CA):
        if candidate and os.path.isfile(candidate):
            ca = candidate
            break
    for name in PROXY_ARGS:
        if host_env.get(name):
            args[name] = host_env[name]
    return args, ca, notes


def _dockerignore(context: Path) -> list[str]:
    path = context / ".dockerignore"
    if not path.is_file():
        return []
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _ignore_regex(pattern: str):
    """A ``.dockerignore`` pattern (Go filepath.Match plus ``**``) as a regex over a relative path."""
    import re

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
    rules = [(line.startswith("!"), _ignore_regex(line.removeprefix("!").strip())) for line in _dockerignore(context)]
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
    return sorted(files)


def recipe_hash(context: Path, files: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + (context / name).read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()


def _git(context: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(context), *args], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


def _source(context: Path) -> str:
    """The repository URL without any credentials, else the recipe's path."""
    url = _git(context, "remote", "get-url", "origin")
    if url:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme and "@" in parts.netloc:
            url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
        return url
    return f"file://{context}"


def _refuse_env_file(context: Path, files: list[str], env_file: str | None) -> None:
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


def _refuse_secret_content(context: Path, files: list[str], masker) -> None:
    """A context file holding a secret value could be COPYed into a layer: refuse before sending."""
    if not masker:
        return
    bad = [name for name in files if (context / name).is_file() and masker.contains_secret((context / name).read_bytes())]
    if bad:
        raise ConfigError(Problem(f"build context file(s) contain the value of a secret in scope: {', '.join(bad)}", hint="remove the value from the recipe, or add the file to .dockerignore; pass secrets at run time"))


def resolve_build(args, config, env_file: str | None, masker, host_env: Mapping[str, str] | None = None) -> BuildSpec:
    """Decide the whole build: no daemon contact, nothing written."""
    from runner.policy import Classifier

    host_env = dict(os.environ if host_env is None else host_env)
    if config is None:
        from runner.config import load_config

        config = load_config()
    flavor = getattr(args, "flavor", None) or default_flavor(config)
    if flavor not in FLAVORS:
        raise UsageError(f"unknown flavor '{flavor}'", hint="use --flavor rocm or --flavor cuda")
    context = recipes_dir(config)
    dockerfile = f"{flavor}/Dockerfile"
    if not (context / dockerfile).is_file():
        raise ConfigError(Problem(f"no recipe {context / dockerfile}", hint="set images.dir to a directory with <flavor>/Dockerfile, or reinstall primus-runner"))
    section = (config.get("images", flavor) if config is not None else None) or {}
    base = getattr(args, "base", None) or section.get("base") or DEFAULT_BASES[flavor]
    tag = getattr(args, "tag", None) or section.get("tag") or DEFAULT_TAG
    tag = tag.replace("{flavor}", flavor).replace("{version}", __version__)

    pairs = parse_build_args(getattr(args, "build_arg", []) or [], host_env)
    check_build_args(pairs, Classifier.from_config(config), masker)
    pip_args, ca, notes = host_pip_settings(host_env)
    if not any(k == "BASE_IMAGE" for k, _ in pairs):
        pairs.insert(0, ("BASE_IMAGE", base))
    else:
        base = next(v for k, v in pairs if k == "BASE_IMAGE")
    given = {k for k, _ in pairs}
    pairs += [(k, v) for k, v in pip_args.items() if k not in given]

    files = context_files(context, dockerfile)
    _refuse_env_file(context, files, env_file)
    _refuse_secret_content(context, files, masker)
    files = [f for f in files if f != CA_NAME]  # the runner's own staged copy wins
    digest = recipe_hash(context, files)
    labels = (
        (L_SOURCE, _source(context)),
        # The last commit that touched the recipe: stable while other files change, so rebuilds stay cached.
        (L_REVISION, _git(context, "log", "-1", "--format=%H", "--", ".") or "unknown"),
        (L_BASE, base),
        (L_FLAVOR, flavor),
        (L_VERSION, __version__),
        (L_RECIPE, digest),
    )
    return BuildSpec(
        flavor=flavor, context_dir=str(context), dockerfile=dockerfile, base=base, tag=tag,
        build_args=tuple(pairs), labels=labels, files=tuple(files), ca_source=ca, recipe_hash=digest,
        no_cache=bool(getattr(args, "no_cache", False)), notes=tuple(notes),
    )


# ------------------------------------------------------------------ context

def make_context(spec: BuildSpec) -> bytes:
    """The build context as a tar: recipe files plus the staged CA bundle.

    Owner and mtime are normalised, so the daemon's cache sees only content
    and mode: a rebuild with nothing changed is all cache hits.
    """
    context = Path(spec.context_dir)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in spec.files:
            info = tar.gettarinfo(str(context / name), arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if info.isfile():
                with open(context / name, "rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
        ca = Path(spec.ca_source).read_bytes() if spec.ca_source else b""
        info = tarfile.TarInfo(CA_NAME)
        info.size, info.mode, info.mtime = len(ca), 0o644, 0
        tar.addfile(info, io.BytesIO(ca))
    return buffer.getvalue()


def build_key(spec: BuildSpec, context_tar: bytes, base_id: str | None) -> str:
    """What decides the image's content: same key, same image (so ``.created`` is kept)."""
    blob = json.dumps([spec.dockerfile, list(spec.build_args), list(spec.labels), base_id, hashlib.sha256(context_tar).hexdigest()])
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


# ------------------------------------------------------------------ progress

class _Progress:
    """Steps, cache hits and elapsed time: a rich bar on a terminal, plain lines otherwise."""

    def __init__(self, out: Output, tag: str):
        self.out = out
        self.tag = tag
        self.started = time.monotonic()
        self.step = 0
        self.total = 0
        self.cache_hits = 0
        self.ran = 0  # steps that executed (not cached, not FROM)
        self.running = False
        self.pending: str | None = None
        self.step_started = self.started
        self.rich = None
        if out.color:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.rich = Progress(
                SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[cached]} cached"), TimeElapsedColumn(), TextColumn("{task.fields[line]}"),
                console=out.rich_console(stderr=True), transient=True,
            )
            self.task = self.rich.add_task(f"building {tag}", total=None, cached=0, line="")
            self.rich.start()

    def _plain(self, state: str) -> None:
        if self.pending is not None:
            self.out.info(f"[{self.step}/{self.total}] {state:<7} {self.pending}")
            self.pending = None

    def _finish_step(self) -> None:
        if self.pending is not None:
            self._plain("")
        took = time.monotonic() - self.step_started
        if self.running and took >= 2 and not self.rich:
            self.out.info(f"[{self.step}/{self.total}] done in {took:.1f}s")
        self.running = False

    def line(self, text: str) -> None:
        """One line of the daemon's build output (already masked)."""
        stripped = text.strip()
        if stripped.startswith("Step ") and "/" in stripped.split(" :", 1)[0]:
            self._finish_step()
            head, _, instruction = stripped.partition(" : ")
            number, _, total = head[5:].partition("/")
            self.step, self.total = int(number), int(total)
            self.step_started = time.monotonic()
            self.pending = instruction[:100]
            if self.rich:
                self.rich.update(self.task, total=self.total, completed=self.step - 1, description=f"step {self.step}/{self.total}", line=instruction[:60])
            return
        if stripped == "---> Using cache":
            self.cache_hits += 1
            if self.rich:
                self.rich.update(self.task, cached=self.cache_hits)
            self._plain("cached")
            return
        if stripped.startswith("---> Running in"):
            self.ran += 1
            self.running = True
            self._plain("run")
            return
        if stripped.startswith("--->"):
            self._plain("base" if (self.pending or "").upper().startswith("FROM") else "")
            return
        if stripped.startswith(("Removing intermediate container", "Successfully built", "Successfully tagged")):
            return
        if self.rich and stripped:
            self.rich.update(self.task, line=stripped[:60])
        elif stripped and self.out.verbose:
            self.out.info(f"    {stripped}")

    def close(self) -> None:
        if not self.rich:
            self._finish_step()
        if self.rich:
            self.rich.update(self.task, completed=self.total)
            self.rich.stop()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


# ------------------------------------------------------------------ build

def _api():
    """The runner's thin Engine API client (stdlib HTTP on the socket); exit 1 when the daemon is not there."""
    from runner.engine_api import Engine

    eng = Engine(timeout=600)
    eng.request("GET", "/_ping", timeout=10)
    return eng


def _image(eng, name: str) -> dict | None:
    from runner.engine_api import ApiError
    from urllib.parse import quote

    try:
        return eng.request("GET", f"/images/{quote(name, safe='')}/json")
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


def _build_stream(eng, spec: BuildSpec, context: bytes, labels: dict[str, str]):
    """POST /build with the context tar; yields the daemon's JSON messages as they arrive."""
    params = {
        "t": spec.tag, "dockerfile": spec.dockerfile, "buildargs": json.dumps(dict(spec.build_args)),
        "labels": json.dumps(labels), "rm": 1, "forcerm": 1, "pull": 0, "nocache": 1 if spec.no_cache else None,
    }
    from runner.engine_api import ApiError

    try:
        pieces = eng.stream("/build", params, method="POST", body=context, headers={"Content-Type": "application/x-tar"})
        buffer = b""
        decoder = json.JSONDecoder()
        for piece in pieces:
            buffer += piece
            text = buffer.decode("utf-8", "surrogateescape")
            pos = 0
            while True:
                while pos < len(text) and text[pos] in " \r\n\t":
                    pos += 1
                try:
                    message, end = decoder.raw_decode(text, pos)
                except ValueError:
                    break
                yield message
                pos = end
            buffer = text[pos:].encode("utf-8", "surrogateescape")
    except ApiError as exc:  # the daemon refused the build request itself (bad Dockerfile path, bad args)
        yield {"error": exc.message}


def _created_for(api, spec: BuildSpec, key: str) -> str:
    """Keep the ``.created`` of an existing image built from the same inputs, so a rebuild is all cache hits."""
    existing = _image(api, spec.tag)
    labels = ((existing or {}).get("Config") or {}).get("Labels") or {}
    if labels.get(L_BUILD_KEY) == key and labels.get(L_CREATED):
        return labels[L_CREATED]
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def scan_image(api, image: str, masker) -> list[str]:
    """Where a secret value in scope appears in the image's config or history (field paths, never values)."""
    if not masker:
        return []
    from urllib.parse import quote

    found: list[str] = []
    inspect = _image(api, image) or {}
    for section in ("Config", "ContainerConfig"):
        for key, value in (inspect.get(section) or {}).items():
            if value and masker.contains_secret(json.dumps(value).encode()):
                found.append(f"{section}.{key}")
    for field_name in ("Comment", "Author"):
        if inspect.get(field_name) and masker.contains_secret(str(inspect[field_name]).encode()):
            found.append(field_name)
    for index, entry in enumerate(api.request("GET", f"/images/{quote(image, safe='')}/history") or []):
        for key in ("CreatedBy", "Comment", "Tags"):
            if entry.get(key) and masker.contains_secret(json.dumps(entry[key]).encode()):
                found.append(f"history[{index}].{key}")
    return found


def run_build(spec: BuildSpec, out: Output, masker) -> BuildResult:
    """Send the context, stream progress, check the result. Raises on failure (exit 3)."""
    from runner.engine_api import ApiError

    api = _api()
    context = make_context(spec)
    base = _image(api, spec.base)
    key = build_key(spec, context, base["Id"] if base else None)
    labels = {**dict(spec.labels), L_CREATED: _created_for(api, spec, key), L_BUILD_KEY: key}
    progress = _Progress(out, spec.tag)
    log: list[str] = []
    image_id = None
    error = None
    stream = masker.stream() if masker else None
    try:
        for chunk in _build_stream(api, spec, context, labels):
            if "stream" in chunk:
                raw = chunk["stream"]
                text = (stream.feed(raw.encode("utf-8", "surrogateescape")) + (stream.flush() if raw.endswith("\n") else b"")).decode("utf-8", "replace") if stream else raw
                log.append(text)
                for line in text.splitlines():
                    progress.line(line)
            elif "aux" in chunk and isinstance(chunk["aux"], dict) and chunk["aux"].get("ID"):
                image_id = chunk["aux"]["ID"]
            elif "error" in chunk:
                error = chunk.get("error") or "unknown error"
                log.append(error + "\n")
    except ApiError as exc:
        error = exc.message
    finally:
        progress.close()
    if error is not None or image_id is None:
        out.info("".join(log).rstrip("\n"))  # the full log, masked by out
        where = f" at step {progress.step}/{progress.total}" if progress.total else ""
        hint = "the full build log is above"
        if progress.step <= 1 and ("pull access denied" in (error or "") or "not found" in (error or "")):
            hint = f"the base image {spec.base} is not available locally and could not be pulled; docker pull it, or pass --base IMAGE"
        raise RuntimeFailure(f"build of {spec.tag} failed{where}: {(error or 'no image produced').strip()}", hint=hint)
    leaks = scan_image(api, image_id, masker)
    if leaks:
        try:
            api.request("DELETE", f"/images/{image_id}", {"force": 1})
        except ApiError:
            pass
        raise RuntimeFailure(
            f"the built image held the value of a secret in scope ({', '.join(leaks)}); it was removed",
            hint="do not pass secret values into a build; give them to the job at run time",
        )
    result = BuildResult(image_id, spec.tag, spec.flavor, labels, progress.total, progress.cache_hits, progress.ran, progress.elapsed, log)
    return result


# ------------------------------------------------------------------ commands

def _scope(args):
    """Config, env file path and the masker of every secret in scope (host env + env file)."""
    from runner.config import load_config
    from runner.envfile import load_env_file
    from runner.policy import Classifier
    from runner.secrets import Masker, Secret

    env_file = load_env_file(getattr(args, "env_file", None))
    config = load_config(getattr(args, "config", None))
    classifier = Classifier.from_config(config)
    scope = [Secret(v) for source in (os.environ, env_file.values) for k, v in source.items() if v and classifier.is_secret(k)]
    return config, env_file.path, Masker(scope)


def cmd_build(args, out: Output) -> int:
    config, env_file, masker = _scope(args)
    out.use_masker(masker)
    spec = resolve_build(args, config, env_file, masker)
    for note in spec.notes:
        out.warn(note.removeprefix("warning: ")) if note.startswith("warning:") else out.debug(note)
    if args.dry_run:
        if out.json_mode:
            out.json(spec.to_dict())
        else:
            out.result(render_spec(spec))
        return 0
    result = run_build(spec, out, masker)
    if out.json_mode:
        out.json(result.to_dict())
    else:
        out.info(f"built {result.tag} in {result.seconds:.1f}s: {result.steps} steps, {result.cache_hits} cached, {result.ran} run")
        out.result(f"{result.image_id} {result.tag}")
    return 0


def render_spec(spec: BuildSpec) -> str:
    lines = [
        f"flavor:     {spec.flavor}",
        f"context:    {spec.context_dir} ({len(spec.files)} files + {CA_NAME})",
        f"dockerfile: {spec.dockerfile}",
        f"base:       {spec.base}",
        f"tag:        {spec.tag}",
        f"ca bundle:  {spec.ca_source or '(none: empty file staged)'} -> {CA_NAME}",
        f"no-cache:   {str(spec.no_cache).lower()}",
        "build args:",
        *[f"  {k}={v}" for k, v in spec.build_args],
        "labels:",
        *[f"  {k}={v}" for k, v in spec.labels],
        f"  {L_CREATED}=(set when built)",
    ]
    return "\n".join(lines)


def ensure_image(image: str, out: Output, *, flavor: str | None = None, config_file: str | None = None, env_file: str | None = None) -> None:
    """``up --build``: build the recipe tagged as ``image`` when it is not present locally.

    The flavor is ``flavor``, else the config's ``container.gpu`` (rocm when
    none). Secrets in scope are the caller's masker plus host/env-file secrets.
    """
    if _image(_api(), image) is not None:
        return
    from types import SimpleNamespace

    ns = SimpleNamespace(config=config_file, env_file=env_file, flavor=flavor, base=None, tag=image, build_arg=[], no_cache=False, dry_run=False)
    config, env_path, masker = _scope(ns)
    if out.masker:  # keep the caller's (launch) masker: it knows the same secrets and more
        masker = out.masker
    else:
        out.use_masker(masker)
    spec = resolve_build(ns, config, env_path, masker)
    out.notice(f"image {image} is not present locally; building it from {spec.context_dir}/{spec.dockerfile} (base {spec.base})")
    result = run_build(spec, out, masker)
    out.info(f"built {result.tag} ({result.image_id[:19]}) in {result.seconds:.1f}s")
