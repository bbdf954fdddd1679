"""primus-runner: launch ML training jobs in containers without leaking a secret."""

__version__ = "0.1.0"
