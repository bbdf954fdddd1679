"""What the secret-reference tests build their cases from (unit: tests/unit/secrets/refs/;
real stores: tests/integration/secrets/test_secret_refs_stores.py): fresh canary values, parsed
references, the files and programs a source reads, the text of a refusal."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from runner.secrets.refs.grammar import SecretRef, parse_ref


def canary(tag: str) -> str:
    return f"canary-{tag}-{uuid.uuid4().hex}"


def ref(name: str, source: str) -> SecretRef:
    parsed = parse_ref(name, source, f"test:{name}")
    assert isinstance(parsed, SecretRef), parsed
    return parsed


def no_env(name: str):
    """An environment in which no variable is set (the ``env`` argument of ``resolve``)."""
    return None


def secret_file(path: Path, content: str, mode: int = 0o600) -> Path:
    path.write_text(content, encoding="utf-8")
    path.chmod(mode)
    return path


def script(path: Path, body: str) -> Path:
    """An executable ``/bin/sh`` program (a ``cmd:`` source)."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def error_text(exc: BaseException) -> str:
    """A ConfigError's message and hint, as the user reads them."""
    return f"{exc.message}\n{exc.hint or ''}"


def file_ref_config(root: Path, name: str, tag: str) -> tuple[str, Path]:
    """A fresh canary in ``root/store/token`` (0600, in a 0700 directory) and ``root/mine.yaml``, a ``--config``
    file (the user's own, trusted) whose ``secrets:`` gives ``name`` from it: (the value, the config's path)."""
    value = canary(tag)
    store = root / "store"
    store.mkdir(mode=0o700)
    token = secret_file(store / "token", value + "\n")
    config = root / "mine.yaml"
    config.write_text(f"secrets:\n  {name}: file:{token}\n")
    return value, config


def gone(pid: int) -> bool:
    """Dead or a zombie (killed, not yet reaped by init), polled for a while."""
    for _ in range(100):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False
