"""The build stream and its progress display, for every builder.

The classic builder streams JSON messages from the Engine API's ``POST /build``;
BuildKit (through the Docker CLI) and Podman print plain progress lines. Both go
through the masker before anything is shown or kept, then into one progress
display: a rich bar on a terminal, plain lines in CI (``[3/9] cached RUN …``).
"""

from __future__ import annotations

import json
import re
import time

from runner.ui import Output

_BK_STEP = re.compile(r"^#(\d+) \[(?:[^\]]*? )?(\d+)/(\d+)\] (.*)$")
_BK_STATE = re.compile(r"^#(\d+) (CACHED|DONE|ERROR|CANCELED)\b(.*)$")
_BK_OUTPUT = re.compile(r"^#(\d+) \d+\.\d+ (.*)$")
_PODMAN_STEP = re.compile(r"^STEP (\d+)/(\d+): (.*)$")


class Progress:
    """Steps, cache hits and elapsed time: a rich bar on a terminal, plain lines otherwise."""

    def __init__(self, out: Output, tag: str, own_steps: int = 0):
        self.out = out
        self.tag = tag
        # The classic builder turns each of the runner's labels into a LABEL step after the Dockerfile's:
        # the last ``own_steps`` steps are the runner's, not shown nor counted.
        self.own_steps = own_steps
        self.own = False  # in one of them
        self.started = time.monotonic()
        self.step = 0
        self.total = 0
        self.cache_hits = 0
        self.ran = 0  # steps that executed (not cached, not FROM)
        self.running = False
        self.pending: str | None = None
        self.step_started = self.started
        self.vertices: dict[str, tuple[int, str]] = {}  # BuildKit vertex -> (step, instruction)
        self.ended: set[str] = set()
        self.announced: set[str] = set()  # BuildKit vertices whose name is printed already (they printed output)
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
        """One line of the classic builder's output (already masked)."""
        stripped = text.strip()
        if stripped.startswith("Step ") and "/" in stripped.split(" :", 1)[0]:
            self._finish_step()
            head, _, instruction = stripped.partition(" : ")
            number, _, total = head[5:].partition("/")
            self.total = int(total) - self.own_steps
            self.own = int(number) > self.total
            if self.own:
                return
            self.step = int(number)
            self.step_started = time.monotonic()
            self.pending = instruction[:100]
            if self.rich:
                self.rich.update(self.task, total=self.total, completed=self.step - 1, description=f"step {self.step}/{self.total}", line=instruction[:60])
            return
        if self.own:
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
        self._output(stripped)

    def _output(self, text: str) -> None:
        """A line the Dockerfile's own step printed (masked already): shown as it comes, above a bar."""
        if not text:
            return
        if self.rich:
            self.rich.update(self.task, line=text[:60])
            self.rich.console.print(f"    {text}", markup=False, highlight=False)
        else:
            self.out.info(f"    {text}")

    def buildkit_line(self, text: str) -> None:
        """One line of BuildKit's ``--progress=plain`` output (already masked).

        ``#N [stage i/T] INSTRUCTION`` opens step i of T as vertex N; ``#N CACHED``,
        ``#N DONE 1.2s`` and ``#N ERROR …`` end it; ``#N 0.42 text`` is the step's
        own output (shown with ``--verbose``). Vertices may interleave.
        """
        stripped = text.strip()
        match = _BK_STEP.match(stripped)
        if match:
            vertex, number, total, instruction = match.groups()
            if vertex not in self.vertices:
                self.vertices[vertex] = (int(number), instruction[:100])
                self.step, self.total = max(self.step, int(number)), int(total)
                if self.rich:
                    self.rich.update(self.task, total=self.total, completed=len(self.ended), description=f"step {self.step}/{self.total}", line=instruction[:60])
            return
        match = _BK_STATE.match(stripped)
        if match and match.group(1) in self.vertices and match.group(1) not in self.ended:
            vertex, state, rest = match.groups()
            number, instruction = self.vertices[vertex]
            self.ended.add(vertex)
            if state == "CACHED":
                self.cache_hits += 1
                label = "cached"
            elif instruction.upper().startswith("FROM"):
                label = "base"
            elif state == "DONE":
                self.ran += 1
                label = "run"
            else:
                label = "failed"
            if self.rich:
                self.rich.update(self.task, completed=len(self.ended), cached=self.cache_hits)
            else:
                took = f" ({rest.strip()})" if state == "DONE" and label == "run" and rest.strip() else ""
                self.out.info(f"[{number}/{self.total}] {label:<7} {instruction}{took}")
            return
        match = _BK_OUTPUT.match(stripped)
        if match and match.group(1) in self.vertices:
            if not self.rich and match.group(1) not in self.announced:  # the step's name before its first output line
                self.announced.add(match.group(1))
                number, instruction = self.vertices[match.group(1)]
                self.out.info(f"[{number}/{self.total}] {'running':<7} {instruction}")
            self._output(match.group(2))
            return
        if stripped.startswith("#") or not stripped:
            return  # internal vertices (context transfer, metadata, export), digests
        if self.rich:
            self.rich.update(self.task, line=stripped[:60])
        elif self.out.verbose or stripped.lower().startswith(("error", "failed")):
            self.out.info(f"    {stripped}")

    def podman_line(self, text: str) -> None:
        """One line of ``podman build`` (buildah) output, in the classic parser's terms:
        ``STEP i/N: X`` opens a step, ``--> Using cache ID`` is a hit, ``--> ID`` a step that ran."""
        stripped = text.strip()
        step = _PODMAN_STEP.match(stripped)
        if step:
            self.line(f"Step {step.group(1)}/{step.group(2)} : {step.group(3)}")
        elif stripped.startswith("--> Using cache"):
            self.line("---> Using cache")
        elif stripped.startswith("--> ") and self.pending is not None and not self.pending.upper().startswith("FROM"):
            self.line("---> Running in podman")
        elif not stripped.startswith(("-->", "COMMIT", "Successfully tagged")) and not re.fullmatch(r"[0-9a-f]{64}", stripped):
            self.line(stripped)

    def close(self) -> None:
        if not self.rich:
            self._finish_step()
        if self.rich:
            self.rich.update(self.task, completed=self.total)
            self.rich.stop()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started



# ------------------------------------------------------------------ classic builder (Engine API)

def classic_stream(engine, spec, context: bytes, labels: dict[str, str]):
    """POST /build with the context tar; yields the daemon's JSON messages as they arrive."""
    from runner.clients.engine_api import ApiError

    from runner.images.spec import PROXY_ARGS
    from runner.secrets.scope import url_credentials

    # The request URL carries the build args: a proxy whose URL holds a password stays out of it
    # (the daemon's own proxy settings apply to the classic builder; a CLI builder gets it by name).
    buildargs = {k: v for k, v in spec.build_args if not (k in PROXY_ARGS and url_credentials(v))}
    params = {
        "t": spec.tag, "dockerfile": spec.dockerfile, "buildargs": json.dumps(buildargs),
        "labels": json.dumps(labels), "rm": 1, "forcerm": 1, "nocache": 1 if spec.no_cache else None,
        "pull": 0,  # the bases were pulled before (run_build), under the runner's pull policy
    }
    try:
        from runner.clients.engine_api.chunks import json_messages

        pieces = engine.stream("/build", params, method="POST", body=context, headers={"Content-Type": "application/x-tar"})
        yield from json_messages(pieces)
    except ApiError as exc:  # the daemon refused the build request itself (bad Dockerfile path, bad args)
        yield {"error": exc.message}


def run_classic(engine, spec, context: bytes, labels: dict[str, str], progress: Progress, masker) -> tuple[str | None, str | None, list[str]]:
    """(image id, error, masked log) of a classic build."""
    from runner.clients.engine_api import ApiError

    log: list[str] = []
    image_id = error = None
    stream = masker.stream() if masker else None
    partial = ""  # the daemon splits a line across messages ("Step 1/9 : FROM x", then "\n")
    try:
        for chunk in classic_stream(engine, spec, context, labels):
            if "stream" in chunk:
                raw = chunk["stream"]
                text = (stream.feed(raw.encode("utf-8", "surrogateescape")) + (stream.flush() if raw.endswith("\n") else b"")).decode("utf-8", "replace") if stream else raw
                log.append(text)
                *lines, partial = (partial + text).split("\n")
                for line in lines:
                    progress.line(line)
            elif "aux" in chunk and isinstance(chunk["aux"], dict) and chunk["aux"].get("ID"):
                image_id = chunk["aux"]["ID"]
            elif "error" in chunk:
                error = chunk.get("error") or "unknown error"
                log.append((masker.mask(error) if masker else error) + "\n")
    except ApiError as exc:
        error = exc.message
    if partial:
        progress.line(partial)
    return image_id, error, log


# ------------------------------------------------------------------ BuildKit / Podman (a CLI)

def run_cli(builder, spec, context: bytes, labels: dict[str, str], secrets, progress: Progress, masker, engine=None) -> tuple[str | None, str | None, list[str]]:
    """(image id, error, masked log) of a build through a CLI: the context tar on stdin,
    secrets by NAME on the command line and by value only in the child's environment."""
    import os
    import subprocess
    import tempfile
    import threading

    from runner.errors import EngineUnavailable
    from runner.secrets.argv import refuse_secret_argv

    log: list[str] = []
    workdir = tempfile.mkdtemp(prefix="primus-build-")  # holds the image id file only
    iidfile = os.path.join(workdir, "iid")
    try:
        argv = builder.command(spec, labels, iidfile)
        refuse_secret_argv(argv, masker, argv[0])  # checked like the container's config: before it runs
        env = builder.env(secrets, build_args=spec.build_args)
        if builder.kind == "buildkit" and engine is not None:
            env["DOCKER_HOST"] = engine.host  # the daemon the runner found (DOCKER_HOST, a context, the socket)
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        except OSError as exc:
            raise EngineUnavailable(f"cannot run {argv[0]}: {exc.strerror}", hint="install the builder (see primus-runner check)") from None

        def feed() -> None:
            try:
                proc.stdin.write(context)
            except (BrokenPipeError, OSError):
                pass  # the builder stopped early; its output says why
            finally:
                try:
                    proc.stdin.close()
                except OSError:
                    pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        stream = masker.stream() if masker else None
        for raw in iter(proc.stdout.readline, b""):
            data = (stream.feed(raw) + stream.flush()) if stream else raw
            text = data.decode("utf-8", "replace")
            log.append(text)
            line = text.rstrip("\n")
            if builder.kind == "podman":
                progress.podman_line(line)
            else:
                progress.buildkit_line(line)
        code = proc.wait()
        writer.join(timeout=5)
        image_id = open(iidfile).read().strip() if os.path.exists(iidfile) else None
    finally:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    if code != 0:
        errors = [line.strip() for line in "".join(log).splitlines() if "error" in line.lower()]
        return None, (errors[-1] if errors else f"{argv[0]} exited with {code}"), log
    return image_id, None, log


# ------------------------------------------------------------------ one build, any builder

def connect(preference: str | None = None, timeout: float = 600):
    """The runner's Engine API client (``container.engine``: auto | docker | podman); exit 1
    (one message, one fix) when the engine is not there."""
    from runner.clients.engine_api.shared import engine_client

    engine = engine_client(preference, timeout=timeout)
    engine.ping()
    return engine


def _created_for(existing: dict | None, key: str) -> str:
    """Keep the ``.created`` of an existing image built from the same inputs, so a rebuild is all cache hits."""
    from datetime import datetime, timezone

    from runner.images.recipe import L_BUILD_KEY, L_CREATED

    labels = ((existing or {}).get("Config") or {}).get("Labels") or {}
    if labels.get(L_BUILD_KEY) == key and labels.get(L_CREATED):
        return labels[L_CREATED]
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_build(spec, out: Output, masker, *, builder=None, secrets=(), engine=None, pull: str | None = None, lookup=None):
    """Pull the base as ``pull`` wants, send the context, stream progress, scan the result.
    Raises on failure (exit 3; a pull's own failures exit 1 or 2).

    ``builder``: from ``builder.choose`` (the classic Engine API builder when None);
    ``secrets``: (NAME, Secret) for ``spec.secrets``, handed to the builder's env only;
    ``lookup(NAME)``: environment + env file, for registry credentials of the base's pull.
    """
    import os

    from runner.clients.engine_api.pull import pull_as_needed
    from runner.errors import RuntimeFailure
    from runner.images.builder import Builder
    from runner.images.context import base_images, build_key, make_context
    from runner.images.recipe import L_BUILD_KEY, L_CREATED, BuildResult
    from runner.images.scan import inspect_image, remove_image, scan_image, scan_layers

    builder = builder or Builder("classic")
    engine = engine or connect()
    context = make_context(spec, classic_recipe=builder.kind == "classic" and not spec.user_dockerfile)
    # The bases are pulled here, with the registry credentials of ``pull``'s policy; every builder then finds them local.
    for image in base_images(spec):
        pull_as_needed(engine, image, policy=pull or "missing", lookup=lookup or os.environ.get, out=out)
    base = inspect_image(engine, spec.base) if spec.base else None
    existing = inspect_image(engine, spec.tag)
    key = build_key(spec, context, base["Id"] if base else None)
    labels = {**dict(spec.labels), L_CREATED: _created_for(existing, key), L_BUILD_KEY: key}
    progress = Progress(out, spec.tag, own_steps=len(labels) if builder.kind == "classic" else 0)
    try:
        if builder.kind == "classic":
            image_id, error, log = run_classic(engine, spec, context, labels, progress, masker)
        else:
            image_id, error, log = run_cli(builder, spec, context, labels, secrets, progress, masker, engine)
    finally:
        progress.close()
    if error is not None or image_id is None:
        out.info("".join(log).rstrip("\n"))  # the full log, masked by out
        where = f" at step {progress.step}/{progress.total}" if progress.total else ""
        hint = "the full build log is above"
        if progress.step <= 1 and spec.base and ("pull access denied" in (error or "") or "not found" in (error or "")):
            hint = f"the base image {spec.base} is not available locally and could not be pulled; docker pull it, or pass --base IMAGE"
        raise RuntimeFailure(f"build of {spec.tag} failed{where}: {(error or 'no image produced').strip()}", hint=hint)
    leaks = scan_image(engine, image_id, masker)
    if not leaks and (existing or {}).get("Id") != image_id:  # an unchanged image was scanned when it was built
        leaks = scan_layers(engine, image_id, base["Id"] if base else None, masker)
    if leaks:
        remove_image(engine, image_id)
        raise RuntimeFailure(
            f"the built image held the value of a secret in scope ({', '.join(leaks)}); it was removed",
            hint="give secrets to a build step with --secret NAME and RUN --mount=type=secret,id=NAME, or to the job at run time",
        )
    return BuildResult(image_id, spec.tag, spec.flavor, labels, builder.kind, progress.total, progress.cache_hits, progress.ran, progress.elapsed, log)
