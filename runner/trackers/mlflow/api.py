"""What every way of speaking MLflow shares (the REST API, the client, a file store, a direct
write): one experiment as the handshake reads it, where the job's log goes in a run, the write
probe of ``check --online``, and the install line of the client extra."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

LOG_ARTIFACT = "primus-runner/job-output.log"
PROBE_DATA = b"primus-runner write probe\n"  # probe.txt in a directory of its own, removed again
EXTRA_HINT = "pip install 'primus-runner[mlflow]'"


@dataclass(frozen=True)
class Experiment:
    id: str
    deleted: bool
    location: str  # the experiment's artifact root


def probe_dir() -> str:
    """A fresh directory name for one write probe."""
    return f"primus-runner-probe-{uuid.uuid4().hex}"
