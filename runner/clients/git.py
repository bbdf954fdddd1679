"""One git query, for provenance (image labels, tracker run tags): never a failure of its own."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(cwd: str | Path, *args: str) -> str | None:
    """``git ARGS`` run in ``cwd``: its stripped output ("" when it printed nothing), or None
    outside a repository, without git, or when it does not answer within 5 s."""
    try:
        result = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None
