"""The local Docker backend: ``up``, ``ps``, ``logs``, ``down`` and ``run_plan``.

A ``LaunchPlan`` becomes one container: created with public env only and the
runner's labels, secrets passed through the stdin shim (``docker_shim``), output
streamed through the masker as it arrives, exit code returned, container removed.
Interruption at any moment (SIGINT/SIGTERM) stops and removes the container.

The launch path uses the thin stdlib client in ``runner.engine_api`` (fast start); the
docker SDK is used by ``check_engine``/``client`` for other modules.
"""

from __future__ import annotations

import os
import re
import secrets as _random
import signal
import socket
import sys
from collections import deque
from dataclasses import dataclass
from typing import BinaryIO, Callable

from runner.engine_api import START_HINT, ApiError, Demux, Engine, docker_host
from runner.errors import ConfigError, EngineUnavailable, Problem, RuntimeFailure, UsageError
from runner.plan import LABEL, LABEL_JOB, LaunchFlags, LaunchPlan
from runner.secrets import Masker
from runner.ui import Output

LABEL_RUN = "io.primus-runner.run"  # unique per launch: finds the container even without its id
READ_SIZE = 1 << 20
TAIL_LIMIT = 64 << 20  # masked output kept for the tracker handshake (log upload)
EXIT_SIGNAL = {signal.SIGINT: 130, signal.SIGTERM: 143}

_client = None
_engine: Engine | None = None


# ---------------------------------------------------------------- engine access
def check_engine() -> None:
    """Ping the daemon through the SDK; ``EngineUnavailable`` with the fix when it does not answer."""
    client()


def client():
    """A cached docker SDK client (version negotiated); raises ``EngineUnavailable``."""
    global _client
    if _client is None:
        try:
            import docker
        except ImportError:  # pragma: no cover - a dependency of the package
            raise EngineUnavailable("the docker Python package is not installed", hint="pip install docker") from None
        try:
            c = docker.from_env(version="auto", timeout=5)
            c.ping()
        except Exception as exc:  # DockerException, requests errors: all mean "not reachable"
            raise EngineUnavailable(f"Docker daemon is not reachable at {docker_host()} ({_short(exc)})", hint=START_HINT) from None
        c.api.timeout = 300
        _client = c
    return _client


def engine() -> Engine:
    global _engine
    if _engine is None:
        _engine = Engine()
    return _engine


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


# ---------------------------------------------------------------- plan -> container config
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)b?\s*$", re.IGNORECASE)


def parse_bytes(text: str) -> int:
    """Docker's size strings (``16m``, ``64g``, ``1024``) as bytes; ``ConfigError`` otherwise."""
    match = _SIZE.match(str(text))
    if not match:
        raise ConfigError(Problem(f"size '{text}' is not a number with an optional unit (b, k, m, g)", hint="e.g. 16g"))
    number, unit = match.groups()
    return int(float(number) * 1024 ** "bkmgt".index((unit or "b").lower()))


def _ulimit(spec: str) -> dict:
    try:
        name, _, limits = spec.partition("=")
        soft, _, hard = limits.partition(":")
        return {"Name": name, "Soft": int(soft), "Hard": int(hard or soft)}
    except ValueError:
        raise ConfigError(Problem(f"ulimit '{spec}' is not NAME=SOFT[:HARD]")) from None


def _device(spec: str) -> dict:
    parts = spec.split(":")
    host = parts[0]
    inner = parts[1] if len(parts) > 1 and parts[1] else host
    perms = parts[2] if len(parts) > 2 else "rwm"
    return {"PathOnHost": host, "PathInContainer": inner, "CgroupPermissions": perms}


def container_config(plan: LaunchPlan, labels: dict[str, str], entrypoint: list[str] | None, secret_env: list[str], stdin: bool,
                     daemon_log: bool = True) -> dict:
    """The Engine API create body. ``secret_env`` is non-empty only in the env fallback.

    ``daemon_log=False`` (an attached run that removes its container): the daemon keeps
    no copy of the job's raw, unmasked output on disk; the runner streams it masked.
    """
    env = [f"{k}={v}" for k, v in plan.public_env().items()] + secret_env
    host: dict = {
        "Init": True,  # tini as PID 1: SIGTERM reaches the job, zombies are reaped
        "Privileged": plan.privileged,
        "CapAdd": list(plan.cap_add) or None,
        "GroupAdd": list(plan.group_add) or None,
        "SecurityOpt": list(plan.security_opt) or None,
        "Ulimits": [_ulimit(u) for u in plan.ulimits] or None,
        "Devices": [_device(d) for d in plan.devices] or None,
        "Binds": [f"{m.source}:{m.target}:{m.mode}" for m in plan.mounts] or None,
        "IpcMode": plan.ipc or None,
        "NetworkMode": plan.network or None,
        "LogConfig": None if daemon_log else {"Type": "none", "Config": {}},
    }
    if plan.gpu_request == "nvidia":
        host["DeviceRequests"] = [{"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]
    if plan.shm_size:
        host["ShmSize"] = parse_bytes(plan.shm_size)
    if plan.memory:
        host["Memory"] = parse_bytes(plan.memory)
    if plan.cpus:
        host["NanoCpus"] = int(plan.cpus * 1e9)
    config: dict = {
        "Image": plan.image,
        "Cmd": list(plan.command),
        "Env": env,
        "Labels": labels,
        "AttachStdin": stdin,
        "OpenStdin": stdin,
        "StdinOnce": stdin,
        "AttachStdout": True,
        "AttachStderr": True,
        "Tty": False,
        "StopTimeout": int(plan.stop_timeout),
        "HostConfig": {k: v for k, v in host.items() if v is not None},
    }
    if entrypoint is not None:
        config["Entrypoint"] = entrypoint
    if plan.user:
        config["User"] = plan.user
    if plan.workdir:
        config["WorkingDir"] = plan.workdir
    return config


# ---------------------------------------------------------------- signals
class _Interrupted(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _SignalGuard:
    """SIGINT/SIGTERM for the length of a launch.

    Signals are *deferred* around calls that must complete (create, start: once
    the daemon has a container the runner must know its id) and *raise* only
    while waiting for the job (reading output, wait), or at the next checkpoint.
    During cleanup they are recorded, never raised.
    """

    def __init__(self) -> None:
        self.got: int | None = None
        self.armed = False
        self._old: dict = {}

    def __enter__(self) -> "_SignalGuard":
        try:
            for sig in EXIT_SIGNAL:
                self._old[sig] = signal.signal(sig, self._handler)
        except ValueError:  # not the main thread: the caller handles signals
            self._old = {}
        return self

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _handler(self, signum, frame) -> None:
        if self.got is None:
            self.got = signum
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
class _Tail:
    """The last ``limit`` bytes of masked output (for the tracker's log upload)."""

    def __init__(self, limit: int = TAIL_LIMIT):
        self.limit = limit
        self._parts: deque[bytes] = deque()
        self._size = 0

    def add(self, data: bytes) -> None:
        self._parts.append(data)
        self._size += len(data)
        while self._size - len(self._parts[0]) >= self.limit:
            self._size -= len(self._parts.popleft())

    def bytes(self) -> bytes:
        return b"".join(self._parts)[-self.limit:]


class _Sink:
    """One output stream of the job: masked, then written in large writes."""

    def __init__(self, target: BinaryIO | int, masker: Masker, tail: _Tail | None):
        self._stream = masker.stream()
        self._tail = tail
        self._fd: int | None = None
        self._file: BinaryIO | None = None
        if isinstance(target, int):
            self._fd = target
        else:
            try:
                target.flush()
                self._fd = target.fileno()
            except (AttributeError, OSError, ValueError):
                self._file = target

    def write(self, data: bytes) -> None:
        self._emit(self._stream.feed(data))

    def close(self) -> None:
        self._emit(self._stream.flush())
        if self._file is not None:
            self._file.flush()

    def _emit(self, data: bytes) -> None:
        if not data:
            return
        if self._tail is not None:
            self._tail.add(data)
        if self._file is not None:
            self._file.write(data)
            return
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._fd, view)
            except BrokenPipeError:
                return
            view = view[written:]


def _pump(sock: socket.socket, leftover: bytes, out: _Sink, err: _Sink) -> None:
    """Read the attach stream until EOF, demultiplex, mask and write as bytes arrive."""
    demux = Demux()
    sinks = {1: out, 2: err}
    if leftover:
        for stream, data in demux.feed(leftover):
            sinks[stream].write(data)
    buf = bytearray(READ_SIZE)
    view = memoryview(buf)
    recv_into = sock.recv_into
    while True:
        n = recv_into(view)
        if not n:
            return
        for stream, data in demux.feed(view[:n]):
            sinks[stream].write(data)


# ---------------------------------------------------------------- launching
@dataclass(frozen=True)
class Started:
    """What ``on_started`` gets: the job container's id and name."""

    id: str
    name: str

    def __str__(self) -> str:
        return self.id


def _labels(plan: LaunchPlan, extra: dict[str, str] | None, run_id: str) -> dict[str, str]:
    labels = dict(plan.labels)
    labels.setdefault(LABEL, "true")
    labels.setdefault(LABEL_JOB, plan.name)
    labels.update(extra or {})
    labels[LABEL_RUN] = run_id
    return labels


def _create(eng: Engine, plan: LaunchPlan, labels: dict[str, str], out: Output, build: bool, daemon_log: bool = True) -> tuple[str, bool]:
    """Create the job container; returns (id, uses_shim). Picks the secret path (shim or env)."""
    from runner.engines import docker_shim

    secrets = plan.secret_env()
    use_shim = bool(secrets) and plan.secrets_via == "stdin"
    if secrets and not use_shim:
        _warn_env_fallback(out, secrets, "container.secrets_via is 'env'", "set it to stdin to avoid this")
        return _create_once(eng, plan, labels, out, build, None, docker_shim.env_fallback(secrets), False, daemon_log), False
    if not use_shim:
        return _create_once(eng, plan, labels, out, build, None, [], False, daemon_log), False
    image = _inspect_image(eng, plan.image, out, build)
    entrypoint = docker_shim.shim_entrypoint() + list((image.get("Config") or {}).get("Entrypoint") or [])
    cid = _create_once(eng, plan, labels, out, build, entrypoint, [], True, daemon_log)
    if eng.head(f"/containers/{cid}/archive", {"path": "/bin/sh"}) != 404:
        return cid, True
    # No shell in the image: the shim cannot run. Recreate with the values in Config.Env.
    eng.remove(cid)
    _warn_env_fallback(out, secrets, f"image {plan.image} has no /bin/sh for the secrets shim", "add /bin/sh (busybox) to the image to avoid this")
    return _create_once(eng, plan, labels, out, build, None, docker_shim.env_fallback(secrets), False, daemon_log), False


def _warn_env_fallback(out: Output, secrets: dict, reason: str, fix: str) -> None:
    out.warn(
        f"{reason}: the values of {', '.join(sorted(secrets))} go into the container's environment, "
        f"visible to anyone who can run `docker inspect` on it ({fix})"
    )


def _create_once(eng: Engine, plan: LaunchPlan, labels: dict[str, str], out: Output, build: bool,
                 entrypoint: list[str] | None, secret_env: list[str], stdin: bool, daemon_log: bool = True) -> str:
    config = container_config(plan, labels, entrypoint, secret_env, stdin, daemon_log)
    for attempt in (0, 1):
        try:
            return eng.create(plan.name, config)
        except ApiError as exc:
            if exc.status == 404 and attempt == 0 and "image" in exc.message.lower():
                if not build:
                    raise _missing_image(plan.image) from None
                _build_image(plan.image, out)
                continue
            if exc.status == 409:
                raise RuntimeFailure(
                    f"a container named {plan.name} already exists",
                    hint=f"pick another --name, or remove it: primus-runner down {plan.name}",
                ) from None
            raise RuntimeFailure(f"the container could not be created: {exc.message}", hint=_daemon_hint(exc.message) or "check the launch options with `primus-runner plan`") from None
    raise _missing_image(plan.image)


def _inspect_image(eng: Engine, image: str, out: Output, build: bool) -> dict:
    from urllib.parse import quote

    for attempt in (0, 1):
        try:
            return eng.request("GET", f"/images/{quote(image, safe='')}/json")
        except ApiError as exc:
            if exc.status != 404:
                raise RuntimeFailure(f"cannot inspect image {image}: {exc.message}") from None
            if not build or attempt:
                raise _missing_image(image) from None
            _build_image(image, out)
    raise _missing_image(image)


def _missing_image(image: str) -> RuntimeFailure:
    return RuntimeFailure(
        f"image {image} not found locally",
        hint=f"build it with `primus-runner build --tag {image}` (or `up --build`), or `docker pull {image}`",
    )


def _build_image(image: str, out: Output) -> None:
    try:
        from runner import images
    except ImportError:
        raise RuntimeFailure(f"image {image} not found locally and image building is not available in this install") from None
    images.ensure_image(image, out)


def run_plan(
    plan: LaunchPlan,
    masker: Masker,
    out: Output,
    *,
    keep: bool = False,
    output: BinaryIO | None = None,
    extra_labels: dict[str, str] | None = None,
    on_started: Callable[[Started], None] | None = None,
    tail: _Tail | None = None,
    build: bool = False,
) -> int:
    """Create, start, attach, stream (masked), wait, clean up; the job's exit code.

    137 with a message when the job was OOM-killed; 130/143 when the runner got
    SIGINT/SIGTERM (the container is stopped, then removed unless ``keep``).
    """
    from runner.engines import docker_shim

    eng = engine()
    labels = _labels(plan, extra_labels, _random.token_hex(8))
    stdout = _Sink(output if output is not None else sys.stdout.buffer, masker, tail)
    stderr = _Sink(sys.stderr.buffer, masker, tail)
    cid: str | None = None
    sock: socket.socket | None = None
    code: int | None = None
    started = False
    gone = False  # the daemon went away mid-run: the error says how to clean up, no second warning
    with _SignalGuard() as guard:
        try:
            cid, use_shim = _create(eng, plan, labels, out, build, daemon_log=keep)  # no raw copy unless kept
            guard.check()
            sock, leftover = eng.attach(cid, stdin=use_shim)
            try:
                eng.start(cid)
            except ApiError as exc:
                raise RuntimeFailure(f"the container could not be started: {exc.message}", hint=_daemon_hint(exc.message) or "check the command, devices and mounts with `primus-runner plan`") from None
            started = True
            if use_shim:
                sock.sendall(docker_shim.encode_payload(plan.secret_env()))
                sock.shutdown(socket.SHUT_WR)  # the job's stdin EOF (StdinOnce)
            if on_started is not None:
                on_started(Started(cid, plan.name))
            guard.arm()
            _pump(sock, leftover, stdout, stderr)
            code = eng.wait(cid)
            guard.disarm()
            if code == 137 and (eng.inspect(cid).get("State") or {}).get("OOMKilled"):
                out.error(f"the job was killed: out of memory (memory limit {plan.memory or 'of the host'})", "raise --memory or reduce the job's memory use")
            elif code == 137:  # a kill from outside (docker kill/stop, the kernel) would otherwise be silent
                out.error(f"the job ended with 137: container {plan.name} was killed (SIGKILL) from outside the runner or by itself")
        except _Interrupted as exc:
            guard.disarm()
            code = EXIT_SIGNAL[exc.signum]
            eng.reset()  # the interrupted request may have left the connection mid-response
            if cid is not None:
                _stop(eng, cid, plan, guard)
                if sock is not None and started:
                    _drain(sock, stdout, stderr)
            action = "kept" if keep else "removed"
            out.error(f"interrupted ({signal.Signals(exc.signum).name}): container {plan.name} stopped and {action}")
        except (EngineUnavailable, ConnectionError) as exc:
            if not started:
                raise
            gone = True  # dockerd died or restarted under a running job: exit 1 (engine unavailable), not a traceback
            reason = exc.message if isinstance(exc, EngineUnavailable) else f"{exc.__class__.__name__}: {exc}"
            raise EngineUnavailable(
                f"the Docker daemon at {eng.host} went away while job {plan.name} was running; its exit code is unknown ({reason})",
                hint=f"restart the daemon, then `primus-runner down {plan.name}` removes the container if it is still there",
            ) from None
        finally:
            guard.disarm()
            if sock is not None:
                sock.close()
            for sink in (stdout, stderr):
                try:
                    sink.close()
                except OSError:
                    pass
            if cid is not None and not keep:
                try:
                    eng.remove(cid)
                except (ApiError, EngineUnavailable, OSError):
                    eng.reset()
                    try:
                        eng.remove(cid)
                    except (ApiError, EngineUnavailable, OSError) as exc:
                        if not gone:
                            out.warn(f"could not remove container {plan.name}: {exc}; remove it with `primus-runner down {plan.name}`")
    return code if code is not None else 3


def _stop(eng: Engine, cid: str, plan: LaunchPlan, guard: _SignalGuard) -> None:
    """Stop with the plan's grace period (SIGTERM, then SIGKILL)."""
    try:
        eng.stop(cid, plan.stop_timeout)
    except (ApiError, EngineUnavailable, OSError):
        eng.reset()
        try:
            eng.kill(cid)
        except (ApiError, EngineUnavailable, OSError):
            pass


def _drain(sock: socket.socket, stdout: _Sink, stderr: _Sink) -> None:
    """The job's last words after a stop (the stream ends when it exits)."""
    try:
        sock.settimeout(2.0)
        _pump(sock, b"", stdout, stderr)
    except (OSError, socket.timeout):
        pass


def start_detached(plan: LaunchPlan, out: Output, *, extra_labels: dict[str, str] | None = None, build: bool = False) -> str:
    """Create and start without waiting (``up --detach``); secrets still go through the shim."""
    from runner.engines import docker_shim

    eng = engine()
    labels = _labels(plan, extra_labels, _random.token_hex(8))
    cid, use_shim = _create(eng, plan, labels, out, build)
    try:
        sock = None
        if use_shim:
            sock, _ = eng.attach(cid, stdin=True)
        eng.start(cid)
        if sock is not None:
            sock.sendall(docker_shim.encode_payload(plan.secret_env()))
            sock.shutdown(socket.SHUT_WR)
            sock.close()  # the daemon still reads what was sent, then the EOF
    except BaseException as exc:
        eng.reset()
        eng.remove(cid)
        if isinstance(exc, ApiError):
            raise RuntimeFailure(f"the container could not be started: {exc.message}", hint=_daemon_hint(exc.message)) from None
        raise
    return cid


# What a daemon's refusal means in config terms (hosts differ: rootless, sandboxed, no GPU stack).
_DAEMON_HINTS = (
    ("apply caps: operation not permitted", "this Docker host refuses privileged mode or these capabilities: set container.options.privileged: false (and trim cap-add)"),
    ("error setting rlimit", "this Docker host refuses the ulimit: lower container.options.ulimit (at most `ulimit -Hn` of the daemon) or set it to []"),
    ("unable to find group", "the image has no such group: remove it from container.options.group-add (or use --gpu none, which drops the ROCm groups)"),
    ("error gathering device information", "a device in the plan does not exist on this host: use --gpu none or the right flavor (primus-runner check lists devices)"),
    ("could not select device driver", "the NVIDIA container toolkit is not set up for this daemon: install nvidia-container-toolkit, or use --gpu rocm|none"),
)


def _daemon_hint(message: str) -> str | None:
    text = message.lower()
    return next((hint for needle, hint in _DAEMON_HINTS if needle in text), None)


# ---------------------------------------------------------------- commands
def up(args, out: Output, flags: LaunchFlags) -> int:
    from datetime import datetime, timezone

    from runner import tracker_runs
    from runner.launch import prepare

    if args.report:
        from runner import report

        report.check_path(args.report)  # fail before launch, not after a long run
    prepared = prepare(out, args.config, args.env_file, args.command, flags)
    plan = prepared.planned.require()
    if plan.trackers.enabled:
        engine().ping()  # fail before a tracker run is created for a launch that cannot happen
    hs = tracker_runs.begin(plan, out)
    plan = plan.with_env(hs.env, "tracker run")
    if args.detach:
        # The job's own tracker client closes the run (MLFLOW_RUN_ID / WANDB_RUN_ID): the runner is gone by then.
        try:
            start_detached(plan, out, build=args.build)
        except BaseException:
            hs.finish(3)
            raise
        out.result(plan.name)
        return 0
    leaks: list = []

    def audit(started: Started) -> None:
        from runner import audit as auditor

        leaks.extend(auditor.audit_container(started.id, prepared.planned))

    tail = _Tail()
    began = datetime.now(timezone.utc)
    from runner import ci

    with ci.group(f"job output: {plan.name} ({plan.image})"):  # a collapsible group in CI logs
        try:
            code = run_plan(
                plan, prepared.masker, out, keep=args.keep, tail=tail, build=args.build,
                on_started=audit if args.audit else None,
            )
        except BaseException:
            hs.finish(3, tail.bytes())  # the container never ran (or the runner failed): no run left RUNNING
            raise
    ended = datetime.now(timezone.utc)
    hs.finish(code, tail.bytes())
    ci.write_summary(plan, code, hs.links, prepared.masker)  # $GITHUB_STEP_SUMMARY: names, links, exit code
    if args.report:
        from runner import report

        report.write_report(
            args.report, plan=plan, started=began, ended=ended, exit_code=code, links=hs.links, leaks=leaks,
            masker=prepared.masker, backend="docker",
        )
    if leaks:
        for leak in leaks:
            out.error(f"secret leaked: {leak}")
        return 4
    return code


def remove_containers(filters: dict[str, str]) -> int:
    """Stop and remove the runner's containers matching these labels (ANDed with the managed label)."""
    eng = engine()
    labels = [f"{LABEL}=true"] + [f"{k}={v}" for k, v in filters.items()]
    count = 0
    for item in eng.containers(labels):
        if item.get("State") == "running":
            eng.stop(item["Id"])
        eng.remove(item["Id"])
        count += 1
    return count


def _name(item: dict) -> str:
    names = item.get("Names") or [item.get("Id", "")[:12]]
    return names[0].lstrip("/")


def _exit_code(status: str) -> int | None:
    match = re.match(r"Exited \((-?\d+)\)", status or "")
    return int(match.group(1)) if match else None


def cmd_ps(args, out: Output) -> int:
    from datetime import datetime, timezone

    rows = []
    for item in engine().containers([f"{LABEL}=true"]):
        rows.append({
            "name": _name(item),
            "id": item["Id"][:12],
            "image": item.get("Image"),
            "status": item.get("State"),
            "exit_code": _exit_code(item.get("Status", "")),
            "created": datetime.fromtimestamp(item.get("Created", 0), timezone.utc).isoformat(),
            "detail": item.get("Status"),
        })
    if out.json_mode:
        out.json(rows)
        return 0
    if not rows:
        out.info("no primus-runner containers")
        return 0
    header = ("NAME", "ID", "IMAGE", "STATUS", "CREATED")
    table = [header] + [(r["name"], r["id"], r["image"], r["detail"], r["created"][:19].replace("T", " ")) for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        out.result("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def _owned(eng: Engine, name: str, out: Output) -> dict | None:
    """The container ``name`` if it is the runner's; otherwise an error is printed and None."""
    try:
        info = eng.inspect(name)
    except ApiError as exc:
        if exc.status == 404:
            out.error(f"no container named {name}", "list the runner's containers with `primus-runner ps`")
            return None
        raise RuntimeFailure(f"cannot inspect {name}: {exc.message}") from None
    if ((info.get("Config") or {}).get("Labels") or {}).get(LABEL) != "true":
        out.error(
            f"{name} is not a primus-runner container (no label {LABEL}=true); it is left alone",
            "manage it with docker directly",
        )
        return None
    return info


def _scope_masker(args, out: Output) -> Masker:
    """The masker for ``logs``: the secrets in scope of this directory's config and env."""
    from runner.launch import prepare

    return prepare(out, args.config, args.env_file, ["true"], LaunchFlags(gpu="none"), quiet=True).masker


def cmd_logs(args, out: Output) -> int:
    from urllib.parse import quote

    masker = _scope_masker(args, out)
    eng = engine()
    info = _owned(eng, args.name, out)
    if info is None:
        return 1
    stdout = _Sink(sys.stdout.buffer, masker, None)
    stderr = _Sink(sys.stderr.buffer, masker, None)
    sinks = {1: stdout, 2: stderr}
    demux = Demux()
    params = {"stdout": 1, "stderr": 1, "follow": 1 if args.follow else 0}
    try:
        for piece in eng.stream(f"/containers/{quote(info['Id'])}/logs", params):
            for stream, data in demux.feed(piece):
                sinks[stream].write(data)
    except KeyboardInterrupt:
        pass
    finally:
        stdout.close()
        stderr.close()
    return 0


def cmd_down(args, out: Output) -> int:
    eng = engine()
    if args.all:
        count = remove_containers({})
        out.info(f"removed {count} primus-runner container{'s' if count != 1 else ''}")
        return 0
    if not args.names:
        raise UsageError("name the containers to remove, or use --all", hint="primus-runner ps lists them")
    failed = False
    for name in args.names:
        info = _owned(eng, name, out)
        if info is None:
            failed = True
            continue
        if (info.get("State") or {}).get("Running"):
            eng.stop(info["Id"])
        eng.remove(info["Id"])
        out.info(f"removed {name}")
    return 1 if failed else 0
