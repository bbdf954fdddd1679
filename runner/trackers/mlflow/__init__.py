"""MLflow as a tracker (``runner.trackers.base.Tracker``): the online check and the run handshake.

What it reads is declared in ``mlflow_settings`` (``SETTINGS``); the work is one module per concern,
imported when a launch or a check asks for it (a plan reads only the declaration):

- ``mlflow_endpoint``: where the tracking server is and how to sign in, read from the plan.
- ``mlflow_stores``: which way of speaking MLflow serves each store: ``mlflow_rest`` (the REST API
  over urllib, no import cost: HTTP(S) servers and Databricks tokens), ``mlflow_filestore`` (a
  ``file:`` store created in the directory as MLflow lays it out), ``mlflow_client`` (the
  ``mlflow`` extra: Databricks OAuth and profiles, GCS, Azure and DBFS artifact stores), and the
  log written straight into a directory or S3 store (``mlflow_artifacts``, boto3 alone).
- ``mlflow_prefetch``: what the handshake waits for, started beside the preflight.
- ``mlflow_handshake``: the run created before launch, closed after it with the log uploaded.
- ``mlflow_check``: ``check --online``.

Credentials are ``Secret``s from the plan, unwrapped where they are used (grep ``reveal``):
``httpapi.authorization`` builds the ``Authorization`` header, ``mlflow_endpoint.tracking_uri``
reads a URI that holds a password (printed only through ``mlflow_endpoint.display``), and
``mlflow_client.client_env`` puts the plan's tracker variables in the process environment for
the duration of one client call, which is where MlflowClient, boto3 and the Databricks SDK read
them. None of them sends them to another origin than the configured one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runner.trackers.mlflow.settings import SETTINGS  # noqa: F401 (its declaration)

if TYPE_CHECKING:
    from runner.trackers.base import Finisher, Handshake, TrackedPlan
    from runner.ui import Output

NAME = "mlflow"
RUN_ENV = ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME")  # what begin() hands the job


def prefetch(plan: TrackedPlan) -> None:
    from runner.trackers.mlflow.preload import prefetch as start

    start(plan)


def check(plan: TrackedPlan, timeout: float) -> dict:
    from runner.trackers.mlflow.online import check as check_online

    return check_online(plan, timeout)


def begin(plan: TrackedPlan, out: Output, hs: Handshake) -> Finisher | None:
    from runner.trackers.mlflow.handshake import begin as open_run

    return open_run(plan, out, hs)
