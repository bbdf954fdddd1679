"""``shell [LAUNCH]``: an interactive shell in the job's image, with the job's env, mounts, GPUs and
secrets (``up -it`` running the image's bash, else sh)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.options import RunOptions
    from runner.ui import Output


def run(out: "Output", *, options: "RunOptions") -> int:
    from runner.commands.launch import launch_engine
    from runner.engines.docker.interactive import SHELL_COMMAND, check_terminal_options
    from runner.errors import UsageError
    from runner.session import pipeline

    if options.command:
        raise UsageError("shell takes no command (it runs the image's shell)",
                         f"run a command with: primus-runner up -it -- {' '.join(options.command)}")
    options = options._replace(command=SHELL_COMMAND, interactive=True, tty=True)
    chosen = launch_engine(None, keep=options.keep, build=options.build)  # the default engine: the shell is a container's
    check_terminal_options(True, True, False, options.dry_run)
    return pipeline.run(options, chosen, out)
