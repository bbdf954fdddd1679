"""A detached job's output, masked into its run's log by a process of the runner's own.

The engine keeps no log of a job (log driver ``none``: its copy would be the raw output on
the host's disk), so ``up -d`` leaves a keeper behind: a fork of the runner that holds the
attach stream, the run's masker (in memory: no value is handed to another program) and the
run's log, and writes the job's output there, masked, until the stream ends. It holds the
run's lock too, so ``logs -f`` follows the log for as long as it grows. It leaves the
runner's session with /dev/null for stdio and no other descriptor, so nothing waits for it.
"""

from __future__ import annotations

import os
import socket

from runner.engines.base import Tail
from runner.secrets import Masker

READ_SIZE = 1 << 20


def start(sock: socket.socket, leftover: bytes, masker: Masker, log: Tail, hold: tuple[int, ...] = ()) -> None:
    """Fork the keeper (it outlives the runner); the runner's copy of ``sock`` is closed.
    ``hold``: descriptors the keeper keeps open besides the stream and the log (the run's lock)."""
    keep = {sock.fileno(), log.kept_in(), *hold}
    pid = os.fork()
    if pid:
        sock.close()
        os.waitpid(pid, 0)  # the first fork exits at once: the keeper is nobody's child
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        _only(keep)
        _copy(sock, leftover, masker, log)
    finally:
        os._exit(0)  # never the runner's atexit handlers, never a traceback on a closed stderr


def _only(keep: set) -> None:
    """/dev/null as stdin, stdout and stderr; every descriptor but ``keep`` closed."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    low = 3
    for fd in sorted(fd for fd in keep if fd is not None and fd > 2):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def _copy(sock: socket.socket, leftover: bytes, masker: Masker, log: Tail) -> None:
    """The attach stream to its end, stdout and stderr each masked on its own, into the log."""
    from runner.clients.engine_api import Demux

    demux = Demux()
    streams = {1: masker.stream(), 2: masker.stream()}
    data = leftover
    while True:
        for kind, piece in demux.feed(data):
            log.keep(streams[kind].feed(piece))
        try:
            data = sock.recv(READ_SIZE)
        except OSError:
            data = b""
        if not data:
            break
    for stream in streams.values():
        log.keep(stream.flush())
