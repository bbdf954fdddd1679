"""``build [--flavor F] [--tag T] … [--dry-run]``: a training image from ``images/<flavor>/`` or a user's Dockerfile."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import BuildOptions
    from runner.ui import Output


def run(out: "Output", *, options: "BuildOptions") -> int:
    from runner import images

    return images.cmd_build(options, out)  # a launcher section's ``dry_run: true`` is read from the config the build loads
