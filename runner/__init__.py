"""primus-runner: launch ML training jobs in containers without leaking a secret."""

__version__ = "0.1.0"
# the label every container and image the runner makes carries its version in (a build needs no launch type for it)
LABEL_VERSION = "io.primus-runner.version"
LAUNCHER_VERSION = "1.0.0"  # the primus-cli command line its launcher modes take
# `--version`: one line, the runner's name and version first; the launcher's words after it, which
# scripts written for primus-cli grep for (as `docker --version` adds its build after its version)
VERSION_TEXT = f"primus-runner {__version__} (takes the command line of Primus CLI version {LAUNCHER_VERSION})"
