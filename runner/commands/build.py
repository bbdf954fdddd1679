"""``build [--flavor F] [--tag T] … [--dry-run]``: a training image from ``images/<flavor>/`` or a user's Dockerfile."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import BuildOptions
    from runner.ui import Output


def run(out: "Output", *, options: "BuildOptions") -> int:
    from runner import images
    from runner.commands.launch import dry_run

    return images.cmd_build(replace(options, dry_run=dry_run(options.dry_run, options.sources)), out)
