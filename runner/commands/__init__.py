"""One module per command, each loaded by name when its command runs (``runner.cli.dispatch.COMMANDS``)."""
