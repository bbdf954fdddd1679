"""Stand-ins for Slurm's client tools: shell scripts on PATH answering fixed text, so a unit test
checks the runner's decision from Slurm's answer, not Slurm."""

from __future__ import annotations

import shlex
from pathlib import Path


def tools(bin_dir: Path, monkeypatch, **answers: str) -> Path:
    """PATH is ``bin_dir`` alone, holding one script per answer: ``name=SCRIPT BODY`` (``/bin/sh``);
    any other Slurm tool is absent."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in answers.items():
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def prints(text: str, code: int = 0, stderr: str = "") -> str:
    """A script body that prints ``text`` (and ``stderr``) and exits ``code``."""
    return f"printf '%s' {shlex.quote(text)}\nprintf '%s' {shlex.quote(stderr)} >&2\nexit {code}"
