"""``up [LAUNCH] [--detach] [--dry-run] -- CMD…``: the job on the engine ``--engine`` names (Docker
or Podman by default), its output streamed and masked, its exit code returned."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import RunOptions
    from runner.ui import Output


def run(out: "Output", *, options: "RunOptions", engine: str | None, default_engine: str | None = None) -> int:
    from runner.commands.launch import launch_engine
    from runner.session import pipeline

    chosen = launch_engine(engine, default_engine, keep=options.keep, build=options.build,
                           interactive=options.interactive, tty=options.tty)
    if options.interactive or options.tty:
        from runner.engines.docker.interactive import check_terminal_options

        check_terminal_options(options.interactive, options.tty, options.detach, options.dry_run)
    return pipeline.run(options, chosen, out)
