"""Which builder runs a build, and the exact command line it gets.

- ``classic``: the Engine API's ``POST /build`` (no CLI needed). It cannot
  carry secrets or cache mounts.
- ``buildkit``: BuildKit through the Docker CLI, for ``--secret`` and
  ``RUN --mount``: ``docker build`` with ``DOCKER_BUILDKIT=1``; with the buildx
  plugin when the CLI has it (current Docker), else an older CLI (Debian's
  20.10 ``/usr/bin/docker``) that drives the daemon's own BuildKit.
- ``podman``: ``podman build`` on Podman (BuildKit-compatible ``--secret``).

A secret reaches the builder as ``--secret id=NAME,env=NAME``: the value lives
only in the child process's environment (set in its env dict here), never in
an argument, a file or a log line.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from pathlib import Path
from typing import Mapping, NamedTuple, Sequence

from runner import subprocesses
from runner.errors import EngineUnavailable, RunnerError
from runner.images.recipe import BuildSpec
from runner.images.spec import PROXY_ARGS
from runner.secrets import Secret

DEBIAN_CLI = "/usr/bin/docker"
NEEDS = ("install the buildx plugin (docker-buildx-plugin), or Debian's docker.io 20.10 CLI at /usr/bin/docker "
         "(apt-get install docker.io), which drives the daemon's own BuildKit")


class Builder(NamedTuple):
    kind: str  # classic | buildkit | podman
    cli: str | None = None  # the program (buildkit, podman)
    detail: str = ""  # e.g. "buildx v0.24" or "docker CLI 20.10 (DOCKER_BUILDKIT=1)"

    def describe(self) -> str:
        if self.kind == "classic":
            return "classic (Engine API)"
        return f"{self.kind} ({self.cli}{', ' + self.detail if self.detail else ''})"

    def command(self, spec: BuildSpec, labels: Mapping[str, str], iidfile: str) -> list[str]:
        """The CLI's argv, reading the context tar from stdin: secret NAMES only, never a value."""
        argv = [self.cli or "docker", "build", "--file", spec.dockerfile, "--tag", spec.tag, "--iidfile", iidfile]
        if self.kind == "buildkit":
            argv += ["--progress=plain"]
        if self.kind == "podman":
            argv += ["--layers"]
        for key, value in spec.build_args:
            # A proxy (whose URL may carry a password) by NAME: the CLI reads its value from its environment (``env``).
            argv += ["--build-arg", key if key in PROXY_ARGS else f"{key}={value}"]
        for key, value in labels.items():
            argv += ["--label", f"{key}={value}"]
        for name in spec.secrets:
            argv += ["--secret", f"id={name},env={name}"]
        if spec.no_cache:
            argv.append("--no-cache")
        argv.append("-")  # the context tar on stdin; bases were pulled before (the runner's pull policy)
        return argv

    def env(self, secrets: Sequence[tuple[str, Secret]], base: Mapping[str, str] | None = None,
            build_args: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
        """The child's environment: the caller's, BuildKit on, the proxy build args ``command``
        names without a value, and each secret by its NAME."""
        env = dict(os.environ if base is None else base)
        if self.kind == "buildkit":
            env["DOCKER_BUILDKIT"] = "1"
        env.update((key, value) for key, value in build_args if key in PROXY_ARGS)
        for name, value in secrets:
            env[name] = value.reveal()  # the one place a build secret leaves the runner: the builder's env
        return env


def _run(argv: list[str]) -> subprocesses.Completed | None:
    try:
        return subprocesses.run(argv, timeout=10)
    except RunnerError:
        return None


def _candidates() -> list[str]:
    """Every ``docker`` program on PATH, then Debian's; each once."""
    seen: dict[str, str] = {}
    for directory in os.environ.get("PATH", "").split(os.pathsep) + [os.path.dirname(DEBIAN_CLI)]:
        path = os.path.join(directory or ".", "docker")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            seen.setdefault(os.path.realpath(path), path)
    return list(seen.values())


def _probe(cli: str) -> Builder | None:
    """Can this CLI drive BuildKit? A CLI older than 23 builds with BuildKit itself under
    ``DOCKER_BUILDKIT=1``; a newer one only through its buildx plugin."""
    version = _run([cli, "--version"])
    match = re.search(r"version (\d+)\.(\d+)", version.stdout_text if version is not None else "")
    if match and int(match.group(1)) < 23:
        return Builder("buildkit", cli, f"docker CLI {match.group(1)}.{match.group(2)}, DOCKER_BUILDKIT=1")
    buildx = _run([cli, "buildx", "version"])
    if buildx is not None and buildx.returncode == 0:
        parts = buildx.stdout_text.split()
        return Builder("buildkit", cli, f"buildx {parts[1]}" if len(parts) > 1 else "buildx")
    return None


def _cache_file() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "primus-runner", "builders.json")


def _stamp(cli: str) -> str:
    """What identifies a CLI and its plugins: the program's and the plugin directories' mtimes."""
    parts = []
    for path in (cli, *_PLUGIN_DIRS):
        path = os.path.expanduser(path)
        try:
            st = os.stat(path)
            parts.append(f"{path}:{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            parts.append(f"{path}:-")
    return "|".join(parts)


# Where the Docker CLI looks for plugins (buildx): a new plugin changes a directory's mtime.
_PLUGIN_DIRS = ("~/.docker/cli-plugins", "/usr/local/lib/docker/cli-plugins", "/usr/local/libexec/docker/cli-plugins",
                "/usr/lib/docker/cli-plugins", "/usr/libexec/docker/cli-plugins")


@functools.lru_cache(maxsize=None)
def find_buildkit(remember: bool = False) -> Builder | None:
    """The first Docker CLI (PATH order, then Debian's) that can drive BuildKit.

    Each probe runs the CLI once or twice (~50-100 ms each); a build (``remember``) keeps
    the answers in the user's cache directory (paths and versions only), keyed by the CLI's
    and the plugin directories' mtimes, so a no-change rebuild does not pay for them. A dry
    run and ``check`` read them and write nothing.
    """
    import json

    path = _cache_file()
    try:
        with open(path, encoding="utf-8") as fh:
            cache = json.load(fh)
    except (OSError, ValueError):
        cache = {}
    found, changed = None, False
    for cli in _candidates():
        stamp = _stamp(cli)
        entry = cache.get(cli)
        if not isinstance(entry, dict) or entry.get("stamp") != stamp:
            probed = _probe(cli)
            entry = {"stamp": stamp, "detail": probed.detail if probed else None}
            cache[cli], changed = entry, True
        if entry.get("detail"):
            found = Builder("buildkit", cli, entry["detail"])
            break
    if changed and remember:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path + ".tmp", "w", encoding="utf-8") as fh:
                json.dump(cache, fh)
            os.replace(path + ".tmp", path)
        except OSError:
            pass  # a read-only home: probe again next time
    return found


def find_podman() -> Builder | None:
    path = shutil.which("podman")
    return Builder("podman", path) if path else None


def choose(spec: BuildSpec, engine: str | None = None, remember: bool = False) -> Builder:
    """The builder for ``spec`` (``decide``)."""
    return decide(spec.dockerfile_path(), spec.secrets, spec.user_dockerfile, engine, remember)


def decide(dockerfile: Path, secrets: Sequence[str], user_dockerfile: bool, engine: str | None = None,
           remember: bool = False) -> Builder:
    """The builder a build of ``dockerfile`` uses (``build``, and ``check`` naming it): Podman's own on
    Podman; BuildKit when the build needs it (secrets, ``RUN --mount``) and a CLI can drive it; the
    classic Engine API builder otherwise.

    A project recipe's mounts are only a cache (and optional secrets), so without BuildKit
    it still builds classically, mounts dropped; a user's Dockerfile with mounts, or any
    build with ``--secret``, needs BuildKit and exits 1 with what to install.
    """
    from runner.images.context import uses_mounts

    if engine == "podman":
        found = find_podman()
        if found is None:
            raise EngineUnavailable("podman is not installed, so nothing can build on the Podman engine", hint="apt-get install podman")
        return found
    if not secrets and not uses_mounts(dockerfile.read_text(encoding="utf-8", errors="replace")):
        return Builder("classic")
    found = find_buildkit(remember)
    if found is not None:
        return found
    if secrets:
        raise EngineUnavailable(f"build secrets ({', '.join(secrets)}) need BuildKit, and no Docker CLI here can drive it", hint=NEEDS)
    if user_dockerfile:
        raise EngineUnavailable(f"{dockerfile} uses RUN --mount, which needs BuildKit, and no Docker CLI here can drive it", hint=NEEDS)
    return Builder("classic", detail="recipe mounts dropped: no BuildKit here")


def builder_status(engine: str | None = None) -> dict:
    """For ``check``: which builders are available, and what BuildKit needs when there is none."""
    if engine == "podman":
        podman = find_podman()
        return {"engine": "podman", "classic": False, "buildkit": podman is not None, "builder": podman.describe() if podman else None,
                "secrets": podman is not None, "needs": None if podman else "apt-get install podman"}
    found = find_buildkit()
    return {
        "engine": "docker",
        "classic": True,  # the Engine API's builder: always there when the daemon is
        "buildkit": found is not None,
        "builder": found.describe() if found else None,
        "secrets": found is not None,
        "needs": None if found else NEEDS,
    }


def render_command(builder: Builder, argv: list[str], secrets: Sequence[str]) -> str:
    """The command line for ``--dry-run``: values are not in it (secrets travel in the child's env)."""
    import shlex

    env = (["DOCKER_BUILDKIT=1"] if builder.kind == "buildkit" else []) + [f"{n}=<from env>" for n in secrets]
    return " ".join(env + [shlex.quote(a) for a in argv]) + " <context.tar"
