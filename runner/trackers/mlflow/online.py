"""``check --online`` for MLflow: the tracking store listed once, and a write probe in the artifact
store of the run's experiment (removed again), each within the check's timeout."""

from __future__ import annotations

from runner.errors import EngineUnavailable
from runner.trackers import httpapi
from runner.trackers.mlflow.artifact_origin import artifact_refusal
from runner.trackers.base import TrackedPlan
from runner.trackers.mlflow.api import EXTRA_HINT
from runner.trackers.mlflow.client import Client
from runner.trackers.mlflow.endpoint import tracking_uri
from runner.trackers.mlflow.settings import is_databricks_uri
from runner.trackers.mlflow.stores import tracking_api, writer


def _check_store(plan: TrackedPlan, api, timeout: float) -> tuple[str, str]:
    """(status, detail) of a write probe in the artifact store of the run's experiment, removed afterwards."""
    name = plan.job.public_env().get("MLFLOW_EXPERIMENT_NAME") or "Default"
    found = api.experiment(name) or (api.experiment("Default") if name != "Default" else None)
    if found is None:
        return "reachable", f"artifact store not probed: experiment '{name}' does not exist yet"
    refusal = artifact_refusal(api.display, found.location)
    if refusal:
        return "unreachable", f"artifact store of experiment '{name}' not probed: {refusal}"
    prober = writer(plan, api, found.location)
    if isinstance(prober, Client) and prober is not api:
        prober = Client(plan, timeout, retries=0)
    elif prober is None:
        upload = bool(plan.job.trackers.settings.get("mlflow_upload_logs"))
        detail = f"artifact store {found.location} is not served by the tracking server; checking it needs the MLflow client ({EXTRA_HINT})"
        return ("not-installed" if upload else "reachable"), detail
    try:
        prober.probe(found.location)
    except httpapi.HTTPFailure as exc:
        return httpapi.failure_status(exc), f"artifact store {found.location}: {exc.detail}"
    return "reachable", f"artifact store {found.location} writable (probe written and removed)"


def check(plan: TrackedPlan, timeout: float) -> dict:
    uri = tracking_uri(plan)
    try:
        api = tracking_api(plan, timeout=timeout)
    except EngineUnavailable as exc:
        return httpapi.status("mlflow", "not-installed", f"{exc.message.split(';')[0]} ({exc.hint})")
    if api is None:
        scheme = uri.split(":", 1)[0] if ":" in uri else "a local path"
        return httpapi.status("mlflow", "skipped", f"MLFLOW_TRACKING_URI uses {scheme}: a store inside the job, nothing to contact")
    if isinstance(api, Client):
        api.extra["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"  # one try within --timeout
    try:
        count = api.search()
    except httpapi.HTTPFailure as exc:
        if exc.status == 404:
            return httpapi.status("mlflow", "unreachable", f"{api.display} answered HTTP 404: not an MLflow tracking server (check MLFLOW_TRACKING_URI)")
        return httpapi.status("mlflow", httpapi.failure_status(exc), f"{api.display}: {exc.detail}")
    tracking = f"{api.display} listed {count} experiment{'s' if count != 1 else ''}"
    if is_databricks_uri(uri):
        return httpapi.status("mlflow", "reachable", f"{tracking}; Databricks manages the artifact store")
    try:
        status, detail = _check_store(plan, api, timeout)
    except httpapi.HTTPFailure as exc:
        status, detail = httpapi.failure_status(exc), f"artifact store: {exc.detail}"
    return httpapi.status("mlflow", status, f"{tracking}; {detail}")
