"""CI integration: GitHub Actions masks, annotations, groups and step summary.

Under GitHub Actions the runner first prints ``::add-mask::VALUE`` for every
secret in scope: the one place a value is printed on purpose, because the
Actions runner consumes those lines and hides the value in its logs.
"""

from __future__ import annotations

import os
import sys
from typing import Iterable

from runner.secrets import Secret

_registered: set[int] = set()


def github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS", "").lower() == "true"


def gitlab_ci() -> bool:
    return os.environ.get("GITLAB_CI", "").lower() == "true"


def register_masks(secrets: Iterable[Secret]) -> None:
    """Emit ``::add-mask::`` once per value, before any other output that could carry it."""
    if not github_actions():
        return
    from runner.secrets import encodings

    for secret in secrets:
        value = secret.reveal()
        if id(secret) in _registered or not value:
            continue
        _registered.add(id(secret))
        for form in sorted(encodings(value)):
            line = form.decode("utf-8", "surrogateescape")
            if "\n" not in line and "\r" not in line:
                sys.stdout.write(f"::add-mask::{line}\n")
        for part in value.splitlines():
            if part:
                sys.stdout.write(f"::add-mask::{part}\n")
    sys.stdout.flush()
