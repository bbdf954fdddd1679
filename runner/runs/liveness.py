"""Is an attached run's runner still alive? A lock only the live runner holds.

The runner takes an exclusive ``flock`` on ``<run dir>/.lock`` before its record
says ``running`` and holds it until it exits; the kernel drops it when the process
dies, SIGKILL included. A reader that can take the lock knows the runner is gone,
so a killed run shows as ``lost`` instead of running forever. Without a run
directory (unwritable state), the pid and its start time decide.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = ".lock"


def hold(run_dir: Path) -> int | None:
    """Take the run's lock; the fd (keep it open for the life of the run), or None."""
    try:
        fd = os.open(run_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except OSError:
        return None


def release(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def runner_alive(run_dir: Path | None, pid: int | None, pid_start: str | None) -> bool | None:
    """True/False when it can be told on this host, None when it cannot."""
    lock = run_dir / LOCK_NAME if run_dir else None
    if lock is not None and lock.exists():
        try:
            fd = os.open(lock, os.O_RDONLY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False  # nobody holds it: the runner is gone
        except BlockingIOError:
            return True
        except OSError:
            return None
        finally:
            os.close(fd)
    if pid:
        return process_start(pid) == pid_start if pid_start else os.path.exists(f"/proc/{pid}")
    return None


def process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22): with the pid,
    it names one process even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]
