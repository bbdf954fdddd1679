"""The one way the runner runs a short-lived program to completion: ``run``.

No shell (an argv list), stdin closed or fed the bytes given, the environment the caller
passes (a fresh copy, never the runner's own by accident of mutation), the program in its
own session so a timeout or an interrupt kills it and everything it started, time bounded,
stdout bounded, stderr kept as its last lines. A failure to finish is a ``RunnerError``
naming the program; a non-zero exit status is the caller's to judge (``Completed.returncode``).

Users: git queries, the Slurm commands (sbatch, scontrol, sacct, scancel, sinfo), the
BuildKit probes, the secret stores that run a program (``pass:``, ``cmd:``), the registry
credential helpers (``docker-credential-*``).

Not users, and why: children that stream or outlive the call. The process engine's job
(``engines/process.py``) and the batch script run as a step of the current allocation
(``engines/slurm/submit.py``: they run for the job's lifetime, their output goes to a log as it
comes), the image builder's CLI (``images/stream.py``: its output is streamed to the user line by
line). ``tests/unit/repo/test_house_rules.py`` finds no other module that starts a program.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from typing import Mapping, NamedTuple, Sequence

from runner.errors import EngineUnavailable, RuntimeFailure

MAX_OUTPUT_BYTES = 1 << 20  # the default bound on stdout: an answer, not a stream
# The tail of stderr kept in memory (an error shows its last lines).
STDERR_KEEP_BYTES = 64 << 10
# How long to wait for a killed program to be reaped.
_REAP = 2.0


class ProgramNotFound(EngineUnavailable):
    """The program is not installed (not on PATH)."""


class ProgramTimedOut(EngineUnavailable):
    """The program did not finish in time; it and its children were killed."""


class CannotRun(RuntimeFailure):
    """The program exists but cannot be started (not executable, ...)."""


class OutputTooLarge(RuntimeFailure):
    """The program printed more than the bound; it was killed."""


class Completed(NamedTuple):
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes  # its last lines only (``STDERR_KEEP_BYTES``), cut at a line start

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode(errors="replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode(errors="replace")


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    umask: int = -1,
    max_output: int = MAX_OUTPUT_BYTES,
    label: str | None = None,
) -> Completed:
    """Run ``argv`` to completion within ``timeout`` seconds. ``env`` None: the runner's
    environment as it is now. ``label`` names the program in errors (default ``argv[0]``)."""
    argv = tuple(str(arg) for arg in argv)
    label = label or argv[0]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ if env is None else env),
            umask=umask,
            start_new_session=True,
            close_fds=True,
        )
    except FileNotFoundError:
        raise ProgramNotFound(f"{argv[0]}: program not found", hint=f"install {argv[0]} or put it on PATH") from None
    except PermissionError:
        raise CannotRun(f"{argv[0]}: permission denied (not executable)") from None
    except OSError as exc:
        raise CannotRun(f"{argv[0]}: cannot run ({exc.strerror})") from None
    with _live_lock:
        _live.add(proc)
    try:
        stdout, stderr = _communicate(proc, stdin, time.monotonic() + timeout, max_output)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise ProgramTimedOut(f"{label} did not answer within {timeout:g} s; killed") from None
    except OverflowError:
        _kill_group(proc)
        raise OutputTooLarge(f"{label} printed more than {_size(max_output)}; killed") from None
    except BaseException:  # Ctrl-C, SIGTERM: the program runs in its own session, so stop it here
        _kill_group(proc)
        raise
    finally:
        with _live_lock:
            _live.discard(proc)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    return Completed(argv, proc.returncode, stdout, stderr)


def kill_running() -> None:
    """Kill every program ``run`` is waiting for now, from any thread (an interrupt of a
    thread that waits for others running programs)."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        _signal_group(proc)


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and not limit % (1 << 20) else f"{limit} bytes"


def _communicate(proc: subprocess.Popen, stdin: bytes | None, deadline: float, max_output: int) -> tuple[bytes, bytes]:
    """Feed stdin and read both pipes until EOF, or until the program has exited and they are
    idle (a helper it left behind, such as an agent, may keep them open); then reap it.
    Raises TimeoutExpired past ``deadline``, OverflowError when stdout exceeds ``max_output``."""
    out, err = bytearray(), bytearray()
    selector = selectors.DefaultSelector()
    for pipe, buf in ((proc.stdout, out), (proc.stderr, err)):
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe.fileno(), selectors.EVENT_READ, buf)
    pending = memoryview(stdin or b"")
    if proc.stdin is not None:
        if pending:
            os.set_blocking(proc.stdin.fileno(), False)
            selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE, None)
        else:
            proc.stdin.close()
    try:
        while selector.get_map():
            exited = proc.poll() is not None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if exited:
                    break
                raise subprocess.TimeoutExpired(proc.args, 0)
            events = selector.select(0 if exited else min(remaining, 0.1))
            if not events and exited:
                break
            for key, _ in events:
                if key.data is None:  # stdin
                    try:
                        pending = pending[os.write(key.fd, pending):]
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(key.fd)
                        proc.stdin.close()
                    continue
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                buf = key.data
                buf += chunk
                if buf is out and len(out) > max_output:
                    raise OverflowError
                if buf is err and len(err) > 2 * STDERR_KEEP_BYTES:
                    # Keep the tail from a line start: a cut line could hold part of a secret
                    # value a masker would no longer recognise.
                    del err[:-STDERR_KEEP_BYTES]
                    newline = err.find(b"\n")
                    del err[: newline + 1 if newline >= 0 else len(err)]
    finally:
        selector.close()
    proc.wait(max(0.0, deadline - time.monotonic()))  # TimeoutExpired past the deadline
    return bytes(out), bytes(err)


# Programs running now, so an interrupt of a waiting thread can stop them.
_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


def _signal_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(proc: subprocess.Popen) -> None:
    _signal_group(proc)
    try:
        proc.wait(_REAP)
    except subprocess.TimeoutExpired:
        pass
