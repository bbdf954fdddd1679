"""Where the shipped data lives: ``policies/`` and ``images/`` at the repository
root, also reachable from an installed package through ``runner/_policies`` and
``runner/_images``."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PACKAGE / f"_{name}", _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate.resolve()
    raise FileNotFoundError(f"primus-runner's {name}/ directory is missing from the installation")


def policies_dir() -> Path:
    return _find("policies")


def images_dir() -> Path:
    return _find("images")
