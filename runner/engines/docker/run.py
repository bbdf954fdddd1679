"""Running one container: create, attach, start, hand over the secrets, stream, wait, clean up.

Signals are handled for the whole life of a launch (``_SignalGuard``): deferred
around calls that must complete (once the daemon has a container the runner
must know its id), raised while waiting for the job; either way the container
is stopped and removed (unless kept) and the exit code is 130/143.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import BinaryIO, Callable

from runner.clients.engine_api import ApiError, Demux, Engine
from runner.engines.base import Tail
from runner.engines.docker import shim
from runner.engines.docker.container import DockerRequest, check_clean
from runner.engines.docker.request import inspect_local
from runner.engines.output import Sink  # noqa: F401 (exec and logs write through it too)
from runner.engines.signals import SignalGuard, interrupted, interruption
from runner.errors import ConfigError, EngineUnavailable, Problem, RuntimeFailure
from runner.launch_plan import LaunchPlan
from runner.secrets import Masker
from runner.ui import Output

READ_SIZE = 1 << 20


# ---------------------------------------------------------------- signals
class _Interrupted(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _SignalGuard(SignalGuard):
    """SIGINT/SIGTERM for the length of a launch.

    Signals are *deferred* around calls that must complete (create, start: once
    the daemon has a container the runner must know its id) and *raise* only
    while waiting for the job (reading output, wait), or at the next checkpoint.
    During cleanup they are recorded, never raised.
    """

    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    def restore(self) -> None:
        self.armed = False
        super().restore()

    def handle(self, signum: int) -> None:
        if self.armed:
            self.armed = False
            raise _Interrupted(signum)

    def check(self) -> None:
        if self.got is not None:
            raise _Interrupted(self.got)

    def arm(self) -> None:
        self.check()
        self.armed = True

    def disarm(self) -> None:
        self.armed = False


# ---------------------------------------------------------------- output
def pump(sock: socket.socket, leftover: bytes, out: Sink, err: Sink, raw: bool = False) -> None:
    """Read the attach stream until EOF, demultiplex, mask and write as bytes arrive.
    ``raw``: a job with a terminal (one stream, as the terminal wrote it)."""
    demux = Demux()
    sinks = {1: out, 2: err}
    if leftover:
        for stream, data in ([(1, leftover)] if raw else demux.feed(leftover)):
            sinks[stream].write(data)
    buf = bytearray(READ_SIZE)
    view = memoryview(buf)
    recv_into = sock.recv_into
    while True:
        n = recv_into(view)
        if not n:
            return
        if raw:
            out.write(bytes(view[:n]))
            continue
        for stream, data in demux.feed(view[:n]):
            sinks[stream].write(data)


# ---------------------------------------------------------------- the image
def inspect_or_fetch(eng: Engine, image: str, ensure_image: Callable[[str], None] | None) -> dict:
    for attempt in (0, 1):
        info = inspect_local(eng, image)
        if info is not None:
            return info
        if ensure_image is None or attempt:
            raise missing_image(image)
        ensure_image(image)
    raise missing_image(image)


def missing_image(image: str) -> RuntimeFailure:
    return RuntimeFailure(
        f"image {image} not found locally",
        hint=f"build it with `primus-runner build --tag {image}` (or `up --build`), or `docker pull {image}`",
    )


def _create(eng: Engine, request: DockerRequest, masker: Masker) -> str:
    """Create exactly ``request.config``: nothing is added here, nothing fetched (``resolve`` got the image)."""
    plan = request.plan
    if request.pending:
        raise RuntimeFailure(f"internal error: the container request is not complete ({', '.join(request.pending)})")
    check_clean(request.config if request.use_shim or not request.secret_names else _public_part(request.config), masker)
    try:
        cid = eng.create(plan.job.name, request.config, platform=plan.container.platform)
    except ApiError as exc:
        if exc.status == 404 and "image" in exc.message.lower():
            raise missing_image(plan.container.image) from None  # gone since resolve got it
        if exc.status == 409:
            raise RuntimeFailure(
                f"a container named {plan.job.name} already exists",
                hint=f"pick another --name, or remove it: primus-runner down {plan.job.name}",
            ) from None
        raise RuntimeFailure(f"the container could not be created: {exc.message}",
                             hint=daemon_hint(exc.message) or "check the launch options with `primus-runner plan`") from None
    if request.use_shim and not eng.has_path(cid, "/bin/sh"):
        eng.remove(cid)
        raise ConfigError(Problem(
            f"image {plan.container.image} has no /bin/sh, so the secrets shim cannot hand {', '.join(request.secret_names)} to the job",
            hint="add /bin/sh (busybox) to the image, or set container.secrets_via: env to accept the values in "
                 "the container's environment (visible to `docker inspect`)",
        ))
    return cid


def _public_part(config: dict) -> dict:
    """With ``secrets_via: env`` (an explicit choice) the secret values are in Env by design:
    check everything else."""
    return {k: v for k, v in config.items() if k != "Env"}


@dataclass
class Attached:
    """A started container the runner is attached to (``watch`` follows it)."""

    eng: Engine
    request: DockerRequest
    cid: str
    sock: socket.socket | None
    leftover: bytes
    guard: _SignalGuard


def launch(eng: Engine, request: DockerRequest, masker: Masker, out: Output) -> Attached:
    """Create, attach and start exactly ``request`` (detached or attached as it says); send the secrets
    through the shim. Nothing is left behind on failure or interruption (130/143 via ``Interrupted``).
    Detached, the signal guard is gone and the attach stream is the caller's to hand over."""
    detach = request.detach
    guard = _SignalGuard().install()
    cid = None
    sock = None
    try:
        cid = _create(eng, request, masker)
        guard.check()
        # Before the start, so no output is missed: the engine keeps no log, the runner reads it all.
        sock, leftover = eng.attach(cid, stdin=bool(request.config.get("OpenStdin")))  # also the shim's secrets, -i
        try:
            eng.start(cid)
        except ApiError as exc:
            raise RuntimeFailure(f"the container could not be started: {exc.message}",
                                 hint=daemon_hint(exc.message) or "check the command, devices and mounts with `primus-runner plan`") from None
        if request.use_shim:
            leftover = _hand_over(sock, leftover, request, guard)
        if detach:
            guard.restore()  # the runner's part ends: what follows the job is the keeper's (``keeper``)
        return Attached(eng, request, cid, sock, leftover, guard)
    except BaseException as exc:
        guard.restore()
        if sock is not None:
            sock.close()
        if cid is not None:
            eng.reset()
            try:
                eng.remove(cid)
            except (ApiError, EngineUnavailable, OSError):
                pass
        if isinstance(exc, _Interrupted):
            raise interruption(exc.signum, f"while starting {request.plan.job.name}; the container was removed") from None
        raise


def _hand_over(sock: socket.socket, leftover: bytes, request: DockerRequest, guard: _SignalGuard) -> bytes:
    """The secrets into the shim's stdin; with a terminal only once the shim has turned its echo
    off. Then the job's stdin EOF (StdinOnce), unless ``-i`` gives it the user's stdin or it has a
    terminal (whose stdin stays open: at its EOF Docker would end the job's output too)."""
    if request.config.get("Tty"):
        from runner.engines.docker.interactive import await_ready

        guard.arm()  # Ctrl-C while the job starts: stopped and removed, as ever
        ready, leftover = await_ready(sock, leftover)
        guard.disarm()
        if not ready:
            return leftover  # the shim refused and exits: nothing is written to its terminal
    sock.sendall(shim.encode_payload(request.plan.job.secret_env()))
    if not request.interactive and not request.config.get("Tty"):  # Docker ends a terminal's output at its stdin's EOF
        sock.shutdown(socket.SHUT_WR)
    return leftover


def watch(run: Attached, masker: Masker, out: Output, *, keep: bool, tail: Tail | None,
          on_running: Callable[[], None] | None = None, stdout: BinaryIO | None = None) -> int:
    """Stream (masked) until the job ends, wait, clean up; the job's exit code.

    137 with a message when the job was OOM-killed; 130/143 when the runner got
    SIGINT/SIGTERM (the container is stopped, then removed unless ``keep``).
    """
    import sys

    eng, plan, guard, cid, sock = run.eng, run.request.plan, run.guard, run.cid, run.sock
    out_sink = Sink(stdout if stdout is not None else sys.stdout.buffer, masker, tail)
    err_sink = Sink(sys.stderr.buffer, masker, tail)
    code: int | None = None
    gone = False  # the daemon went away mid-run: the error says how to clean up, no second warning
    try:
        if on_running is not None:
            on_running()
        guard.arm()
        raw = bool(run.request.config.get("Tty"))
        if run.request.interactive or raw:
            from runner.engines.docker.interactive import attached

            with attached(eng, cid, sock, interactive=run.request.interactive, tty=raw):
                pump(sock, run.leftover, out_sink, err_sink, raw=raw)
        else:
            pump(sock, run.leftover, out_sink, err_sink)
        code = eng.wait(cid)
        guard.disarm()
        _explain_137(eng, cid, plan, code, out)
    except _Interrupted as exc:
        guard.disarm()
        eng.reset()  # the interrupted request may have left the connection mid-response
        _stop(eng, cid, plan)
        _drain(sock, out_sink, err_sink, raw=bool(run.request.config.get("Tty")))
        code = interrupted(exc.signum, f"container {plan.job.name} stopped and {'kept' if keep else 'removed'}", out)
    except (EngineUnavailable, ConnectionError) as exc:
        gone = True  # dockerd died or restarted under a running job: exit 1 (engine unavailable), not a traceback
        reason = exc.message if isinstance(exc, EngineUnavailable) else f"{exc.__class__.__name__}: {exc}"
        raise EngineUnavailable(
            f"the engine at {eng.host} went away while job {plan.job.name} was running; its exit code is unknown ({reason})",
            hint=f"restart the daemon, then `primus-runner down {plan.job.name}` removes the container if it is still there",
        ) from None
    finally:
        guard.restore()
        if sock is not None:
            sock.close()
        for sink in (out_sink, err_sink):
            try:
                sink.close()
            except OSError:
                pass
        if not keep:
            _remove_quietly(eng, cid, plan, out, warn=not gone)
    return code if code is not None else 3


def _explain_137(eng: Engine, cid: str, plan: LaunchPlan, code: int, out: Output) -> None:
    cause = eng.exit_cause(cid, code)
    if cause == "oom":
        out.error(f"the job was killed: out of memory (memory limit {plan.container.memory or 'of the host'})", "raise --memory or reduce the job's memory use")
    elif cause == "oom-likely":  # an engine that cannot report OOM kills here (Podman on a hybrid cgroup layout)
        out.error(f"the job was killed (SIGKILL) under its memory limit {plan.container.memory}: most likely out of memory "
                  f"({eng.kind} does not report OOM kills on this host)", "raise --memory or reduce the job's memory use")
    elif cause == "killed":  # a kill from outside (docker kill/stop, the kernel) would otherwise be silent
        out.error(f"the job ended with 137: container {plan.job.name} was killed (SIGKILL) from outside the runner or by itself")


def _remove_quietly(eng: Engine, cid: str, plan: LaunchPlan, out: Output, warn: bool) -> None:
    for attempt in (0, 1):
        try:
            eng.remove(cid)
            return
        except (ApiError, EngineUnavailable, OSError) as exc:
            eng.reset()
            if attempt and warn:
                out.warn(f"could not remove container {plan.job.name}: {exc}; remove it with `primus-runner down {plan.job.name}`")


def _stop(eng: Engine, cid: str, plan: LaunchPlan) -> None:
    """Stop with the plan's grace period (SIGTERM, then SIGKILL)."""
    try:
        eng.stop(cid, plan.job.stop_timeout)
    except (ApiError, EngineUnavailable, OSError):
        eng.reset()
        try:
            eng.kill(cid)
        except (ApiError, EngineUnavailable, OSError):
            pass


def _drain(sock: socket.socket | None, stdout: Sink, stderr: Sink, raw: bool = False) -> None:
    """The job's last words after a stop (the stream ends when it exits)."""
    if sock is None:
        return
    try:
        sock.settimeout(2.0)
        pump(sock, b"", stdout, stderr, raw=raw)
    except (OSError, socket.timeout):
        pass


# What a daemon's refusal means in config terms (hosts differ: rootless, sandboxed, no GPU stack).
_DAEMON_HINTS = (
    ("apply caps: operation not permitted", "this Docker host refuses privileged mode or these capabilities: set container.options.privileged: false (and trim cap-add)"),
    ("error setting rlimit", "this Docker host refuses the ulimit: lower container.options.ulimit (at most `ulimit -Hn` of the daemon) or set it to []"),
    ("unable to find group", "the image has no such group: remove it from container.options.group-add (or use --gpu none, which drops the ROCm groups)"),
    ("error gathering device information", "a device in the plan does not exist on this host: use --gpu none or the right flavor (primus-runner check lists devices)"),
    ("statfs /dev/mqueue", "--ipc host needs the host's /dev/mqueue (rootless Podman binds it): use --ipc private (container.options.ipc)"),
    ("could not select device driver", "the NVIDIA container toolkit is not set up for this daemon: install nvidia-container-toolkit, or use --gpu rocm|none"),
)


def daemon_hint(message: str) -> str | None:
    text = message.lower()
    return next((hint for needle, hint in _DAEMON_HINTS if needle in text), None)


