"""What every way of speaking MLflow returns (the REST API, the client, a file store):
one experiment as the handshake reads it, and where the job's log goes in a run."""

from __future__ import annotations

from dataclasses import dataclass

LOG_ARTIFACT = "primus-runner/job-output.log"


@dataclass(frozen=True)
class Experiment:
    id: str
    deleted: bool
    location: str  # the experiment's artifact root
