"""primus-runner: launch ML training jobs in containers without leaking a secret."""

__version__ = "0.1.0"
LAUNCHER_VERSION = "1.0.0"  # the primus-cli command line its launcher modes take
# `--version`: the runner's own line, then the launcher's, which scripts written for primus-cli grep for
VERSION_TEXT = f"primus-runner {__version__}\nPrimus CLI version {LAUNCHER_VERSION} (the launcher command line it takes)"
