"""``up -i`` / ``up -t`` / ``shell``: the user's stdin and terminal joined to the job, secrets still kept off both.

The secrets still reach the job through the stdin shim (``shim``). Without a terminal
(``-i``) the runner writes the payload, then copies its own stdin after it. With one
(``-t``) the container's stdin is its tty, which would echo the encoded payload back
to the screen: the tty shim turns echo and line editing off and prints ``shim.READY``;
``await_ready`` waits for it before the payload is written, and the shim restores the
terminal before it ``exec``s the job. Only then (``attached``) does the user's terminal
go raw (as ``docker run -it``: Ctrl-C reaches the job's shell, not the runner), keys are
forwarded and the window size follows the user's. The output is masked like any job's.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import threading
from typing import Iterator

from runner.engines.docker import shim
from runner.errors import UsageError

# The image's shell: bash when it has one, else sh (through the image's entrypoint, as docker run IMAGE bash).
SHELL_COMMAND = ("/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash; fi; exec sh")


def check_terminal_options(interactive: bool, tty: bool, detach: bool, dry_run: bool) -> None:
    """``-t`` needs a terminal on stdin, and neither goes with ``--detach`` (exit 2 before anything)."""
    if (interactive or tty) and detach:
        raise UsageError("-i/-t and --detach do not go together: a detached job has no terminal or stdin to attach",
                         "drop --detach to work in the job, or -it to run it in the background")
    if tty and not dry_run and not os.isatty(sys.stdin.fileno()):
        raise UsageError("the input device is not a TTY: -t/--tty (and shell) need a terminal on stdin",
                         "run it from a terminal, or drop -t (-i alone pipes stdin to the job)")


def await_ready(sock: socket.socket, leftover: bytes) -> tuple[bool, bytes]:
    """Read the raw terminal stream until the tty shim says its echo is off: (ready, the
    output around the marker, which the pump then prints masked). Not ready: the stream
    ended first (the shim refused, e.g. no stty) and no secret may be written."""
    seen = bytearray(leftover)
    while shim.READY not in seen:
        piece = sock.recv(65536)
        if not piece:
            return False, bytes(seen)
        seen += piece
    before, _, after = bytes(seen).partition(shim.READY)
    return True, before + after


class _Forwarder(threading.Thread):
    """The user's stdin to the job's (``forward``), window-size changes to the engine."""

    def __init__(self, sock: socket.socket, forward: bool, resize, tty: bool):
        super().__init__(name="primus-stdin", daemon=True)
        self._sock, self._forward, self._resize, self._tty = sock, forward, resize, tty
        self.wake_r, self.wake_w = os.pipe()

    def run(self) -> None:
        reading = [self.wake_r] + ([sys.stdin.fileno()] if self._forward else [])
        while True:
            ready, _, _ = select.select(reading, [], [])
            if self.wake_r in ready:
                signals = os.read(self.wake_r, 64)
                if b"q" in signals:
                    return
                self._resize()
            if sys.stdin.fileno() in ready and not self._copy():
                reading = [self.wake_r]

    def _copy(self) -> bool:
        data = os.read(sys.stdin.fileno(), 65536)
        try:
            if data:
                self._sock.sendall(data)
                return True
            if not self._tty:  # with a terminal Docker would end the job's output too: only stop reading
                self._sock.shutdown(socket.SHUT_WR)  # the user's EOF is the job's
        except OSError:
            pass  # the job is gone; the pump sees the end
        return False

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.wake_w, b"q")
        self.join(timeout=2.0)
        for fd in (self.wake_r, self.wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def attached(eng, cid: str, sock: socket.socket, *, interactive: bool, tty: bool, kind: str = "containers") -> Iterator[None]:
    """While the pump runs: the terminal raw (``tty``), keys forwarded (``interactive``), the size followed
    (``cid`` is a container's id, or an exec's with ``kind`` "exec")."""
    fd = sys.stdin.fileno()
    saved = None
    resize = (lambda: _resize(eng, cid, kind)) if tty else (lambda: None)
    forwarder = _Forwarder(sock, interactive, resize, tty)
    old_winch = None
    try:
        if tty and os.isatty(fd):
            import termios
            import tty as ttymod

            saved = termios.tcgetattr(fd)
            ttymod.setraw(fd)
            old_winch = signal.signal(signal.SIGWINCH, lambda *_: os.write(forwarder.wake_w, b"w"))
            resize()
        forwarder.start()
        yield
    finally:
        forwarder.stop()
        if old_winch is not None:
            signal.signal(signal.SIGWINCH, old_winch)
        if saved is not None:
            import termios

            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _resize(eng, cid: str, kind: str = "containers") -> None:
    try:
        cols, rows = os.get_terminal_size(sys.stdin.fileno())
    except OSError:
        return
    eng.resize(cid, rows, cols, kind)
