"""A command on a real pseudo-terminal, driven as a user types (the stdlib's ``pty``: no test dependency).

``PtySession(argv, cwd, env)`` starts it with the terminal as its stdin, stdout and
stderr and a fixed window size; ``expect`` waits for a pattern in what the terminal
shows, ``send``/``sendline``/``sendcontrol`` type, ``finish`` reads to the end and
returns the exit code (128 + N for a signal), ``resize`` changes the window as a user
drags it (the kernel sends SIGWINCH). ``transcript`` is every byte shown.
As a context manager it kills what is still running when the block ends. Every
test that drives a terminal uses it.
A failure message never quotes the transcript: it may hold what a test looks for.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import termios
import time


class PtySession:
    def __init__(self, argv: list[str], cwd, env: dict, rows: int = 33, cols: int = 101, timeout: float = 30.0):
        self.timeout = timeout
        self.transcript = bytearray()
        self._seen = 0  # where the next expect starts
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the terminal is its stdin; its size is set before the command starts
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                os.chdir(cwd)
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.code: int | None = None

    def _read(self, deadline: float) -> bool:
        """One read into the transcript; False at the end of the output."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("timed out waiting for the terminal")
        ready, _, _ = select.select([self.fd], [], [], left)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: every holder of the terminal has closed it
            return False
        self.transcript += data
        return bool(data)

    def expect(self, *patterns: str) -> re.Match:
        """The first of ``patterns`` (regular expressions) shown after the last match."""
        compiled = [re.compile(p.encode()) for p in patterns]
        deadline = time.monotonic() + self.timeout
        while True:
            for pattern in compiled:
                match = pattern.search(self.transcript, self._seen)
                if match:
                    self._seen = match.end()
                    return match
            if not self._read(deadline):
                raise AssertionError(f"the output ended before any of {patterns} was shown")

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def sendline(self, line: str) -> None:
        self.send(line.encode() + b"\r")  # Enter, as a terminal sends it

    def sendcontrol(self, key: str) -> None:
        self.send(bytes([ord(key.lower()) & 0x1F]))

    def resize(self, rows: int, cols: int) -> None:
        """The window to ``rows`` x ``cols``: the kernel tells the terminal's foreground job (SIGWINCH)."""
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def kill(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def finish(self) -> int:
        """Read to the end, reap the process: its exit code (128 + N when killed by signal N)."""
        deadline = time.monotonic() + self.timeout
        while self._read(deadline):
            pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        self.code = os.waitstatus_to_exitcode(status)
        return self.code if self.code >= 0 else 128 - self.code

    def __enter__(self) -> "PtySession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Kill what is still running (a failed test): never leave a process behind."""
        if self.code is None:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            try:
                os.close(self.fd)
            except OSError:
                pass
