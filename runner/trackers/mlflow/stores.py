"""Which way of speaking MLflow serves each store of a launch, and the job's log written there.

- The tracking store (``tracking_api``): REST for HTTP servers and Databricks tokens, the
  file store (``mlflow_filestore``) for a ``file:`` URI on this host, the client for the other
  Databricks sign-ins; None: no handshake (a store only the job sees).
- The artifact store (``writer``): the API that opened the run where it reaches the store (the
  server's proxy, a Databricks-signed URL, the file store, the client), else ``Direct`` for a
  directory or S3 (``mlflow_artifacts``, no MLflow client), else the client.
"""

from __future__ import annotations

import os
import urllib.parse

from runner.errors import EngineUnavailable
from runner.trackers import httpapi
from runner.trackers.mlflow import artifacts as mlflow_artifacts, client as mlflow_client, databricks_artifacts
from runner.trackers.base import TrackedPlan
from runner.trackers.httpapi import BEGIN_TIMEOUT, UPLOAD_TIMEOUT
from runner.trackers.job_paths import host_path
from runner.trackers.mlflow.api import EXTRA_HINT
from runner.trackers.mlflow.client import Client, client_env
from runner.trackers.mlflow.endpoint import endpoint, is_http, tracking_uri
from runner.trackers.mlflow.filestore import FileStore, store_root
from runner.trackers.mlflow.rest import Rest
from runner.trackers.mlflow.settings import is_databricks_uri
from runner.ui import Output


def tracking_api(plan: TrackedPlan, *, timeout: float = BEGIN_TIMEOUT):
    """REST for HTTP servers and Databricks tokens, the file store for a ``file:`` URI (no import on the launch
    path), the client for the other Databricks sign-ins; None: no handshake."""
    uri = tracking_uri(plan)
    job_root = store_root(uri)
    if job_root is not None:  # a store that is not on this host (only inside the job) gets no handshake
        root = host_path(plan.container.mounts, job_root)
        return FileStore(root, job_root) if root is not None and os.path.isdir(root) else None
    if not is_http(uri) and not is_databricks_uri(uri):
        return None
    ep = endpoint(plan)
    if ep is None and is_databricks_uri(uri) and mlflow_client.installed():
        return Client(plan, timeout)
    if ep is None:  # Databricks OAuth or a profile, without the extra
        raise EngineUnavailable(
            f"MLflow on Databricks ({uri}) with OAuth or a ~/.databrickscfg profile needs the MLflow client, which is not installed; "
            "nothing was launched",
            hint=f"{EXTRA_HINT} (or sign in with DATABRICKS_HOST and DATABRICKS_TOKEN)",
        )
    return Rest(ep, timeout)


class Direct:
    """The log written into a directory or S3 store without the MLflow client (``mlflow_artifacts``)."""

    def __init__(self, plan: TrackedPlan):
        self.plan = plan

    def _call(self, fn, location: str) -> None:
        try:
            with client_env(self.plan, {"AWS_MAX_ATTEMPTS": "3"}):
                fn(location)
        except httpapi.HTTPFailure:
            raise
        except Exception as exc:  # OSError, botocore's errors, boto3 missing: one shape
            raise mlflow_client.failure(exc) from None

    def upload(self, run_id: str, artifact_uri: str, data: bytes) -> None:
        self._call(lambda location: mlflow_artifacts.upload(location, data), artifact_uri)

    def probe(self, location: str) -> None:
        self._call(mlflow_artifacts.probe, location)


def writer(plan: TrackedPlan, opened, location: str):
    """What writes to the artifact store at ``location``: the API that opened the run when it reaches the store
    (the server's proxy, the client), ``Direct`` for a directory or S3, else the client (None: not installed)."""
    proxied = urllib.parse.urlsplit(location).scheme == "mlflow-artifacts" or (
        databricks_artifacts.handles(location) and is_databricks_uri(tracking_uri(plan)))  # over REST, signed by Databricks
    if isinstance(opened, (Client, FileStore)) or (proxied and isinstance(opened, Rest)):
        return opened  # a file store maps the job's paths to the host's
    if mlflow_artifacts.writes_directly(location):
        return Direct(plan)
    return Client(plan, max(BEGIN_TIMEOUT, UPLOAD_TIMEOUT)) if mlflow_client.installed() else None


def preload_writer(writer, location: str) -> None:
    """Start importing what the writer needs, so the job's run time hides it."""
    if isinstance(writer, Direct):
        mlflow_artifacts.preload(location)
    elif isinstance(writer, Client):
        mlflow_client.LOADER.start()


def upload_log(writer, run_id: str, artifact_uri: str, data: bytes, out: Output, plan: TrackedPlan | None = None) -> None:
    """The (masked) job output as the run's log; a failure is a warning: the job already ran."""
    try:
        try:
            writer.upload(run_id, artifact_uri, data)
        except httpapi.HTTPFailure as exc:
            if exc.code != databricks_artifacts.NEEDS_CLIENT or plan is None or not mlflow_client.installed():
                raise
            Client(plan, max(BEGIN_TIMEOUT, UPLOAD_TIMEOUT)).upload(run_id, artifact_uri, data)  # ADLS Gen2
    except httpapi.HTTPFailure as exc:
        out.warn(f"MLflow: the job output was not uploaded to {artifact_uri}: {exc.detail}")
    except EngineUnavailable as exc:  # the client's import failed
        out.warn(f"MLflow: the job output was not uploaded to {artifact_uri}: {exc.message}")
