"""``file:/path``: a file only its owner can read, its one trailing newline dropped."""

from __future__ import annotations

import os
import stat

from runner.secrets.refs.failures import Missing

FORM = "file:/path"
# A secret file is small; a larger one is a wrong path, not a credential.
_MAX_FILE_BYTES = 1 << 20


def target_problem(target: str) -> str | None:
    return None if os.path.isabs(os.path.expanduser(target)) else "the path must be absolute (or start with ~/)"


def fetch(ref, lookup, timeout: float) -> str:
    path = os.path.expanduser(ref.target)
    try:
        # O_NONBLOCK: a FIFO at the path must not hang the open; it is refused below.
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise Missing("no such file") from None
    except PermissionError:
        raise Missing("permission denied") from None
    except OSError as exc:
        raise Missing(f"cannot open ({exc.strerror})") from None
    try:
        info = os.fstat(fd)  # the file opened, not whatever the path names a moment later
        if not stat.S_ISREG(info.st_mode):
            raise Missing("not a regular file")
        if info.st_mode & (stat.S_IRGRP | stat.S_IROTH):
            raise Missing(
                f"readable by group or others (mode {stat.S_IMODE(info.st_mode):04o}); refused",
                hint=f"chmod 600 {path}",
            )
        if info.st_size > _MAX_FILE_BYTES:
            raise Missing(f"larger than {_MAX_FILE_BYTES >> 20} MiB: not a secret file")
        os.set_blocking(fd, True)
        chunks = []
        size = 0
        while size <= _MAX_FILE_BYTES:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > _MAX_FILE_BYTES:
            raise Missing(f"larger than {_MAX_FILE_BYTES >> 20} MiB: not a secret file")
    except OSError as exc:
        raise Missing(f"cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise Missing("not UTF-8 text") from None
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text
