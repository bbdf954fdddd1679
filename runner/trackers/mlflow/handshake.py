"""The MLflow run handshake: the run created before launch (its experiment found or created), its
ids handed to the job so every rank and requeue logs into it, and after the job the run closed
from the exit code while the (masked) output is uploaded as its log."""

from __future__ import annotations

import threading
from typing import Callable

from runner.errors import CredentialRefused, EngineUnavailable
from runner.trackers import httpapi
from runner.trackers.mlflow.artifact_origin import artifact_refusal
from runner.trackers.base import Handshake, TrackedPlan
from runner.trackers.job_paths import host_path
from runner.trackers.mlflow.api import EXTRA_HINT
from runner.trackers.mlflow.endpoint import experiment_name, tracking_uri
from runner.trackers.mlflow.filestore import FileStore, store_root
from runner.trackers.mlflow.preload import EARLY
from runner.trackers.mlflow.settings import is_databricks_uri
from runner.trackers.mlflow.stores import preload_writer, tracking_api, upload_log, writer as store_writer
from runner.ui import Output

KILLED_CODES = {130, 143}  # SIGINT / SIGTERM: the run was stopped, not broken


def final_status(exit_code: int) -> str:
    if exit_code == 0:
        return "FINISHED"
    return "KILLED" if exit_code in KILLED_CODES else "FAILED"


def _unreachable(display: str, exc: httpapi.HTTPFailure) -> EngineUnavailable | CredentialRefused:
    if exc.redirect:
        return EngineUnavailable(
            f"MLflow server at {display} redirected to another origin ({exc.redirect}); the runner does not send "
            "credentials there, nothing was launched",
            hint="set MLFLOW_TRACKING_URI to the address that answers, if you trust it",
        )
    if exc.status in (401, 403):
        return CredentialRefused(
            f"MLflow server at {display} refused the credentials ({exc.detail}); nothing was launched",
            hint="check MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME/PASSWORD (for Databricks: DATABRICKS_TOKEN, "
            "DATABRICKS_CLIENT_ID/SECRET, or the ~/.databrickscfg profile)",
        )
    if exc.status == 0:
        return EngineUnavailable(
            f"MLflow server at {display} is unreachable ({exc.detail}); nothing was launched",
            hint="start the server or fix MLFLOW_TRACKING_URI; `primus-runner check --online` tests it",
        )
    return EngineUnavailable(f"MLflow server at {display} refused to create the run ({exc.detail}); nothing was launched")


def _run_url(plan: TrackedPlan, display: str, experiment_id: str, run_id: str) -> str:
    if is_databricks_uri(tracking_uri(plan)):
        return f"{display}/ml/experiments/{experiment_id}/runs/{run_id}"
    return f"{display}/#/experiments/{experiment_id}/runs/{run_id}"


def _create_experiment(api, name: str) -> str | None:
    """The new experiment's id; None when another launch created it first (a file store says so itself)."""
    try:
        return api.create_experiment(name)
    except httpapi.HTTPFailure as exc:
        if exc.code == "RESOURCE_ALREADY_EXISTS":
            return None
        raise


def _get_or_create_experiment(api, name: str, lookup=None) -> str:
    for _ in range(2):  # create can race with another launch creating the same experiment
        found = (lookup or api.experiment)(name)
        if found is not None:
            if found.deleted:
                raise EngineUnavailable(
                    f"MLflow experiment '{name}' is deleted on {api.display}; nothing was launched",
                    hint="restore it (mlflow experiments restore) or set another trackers.mlflow_experiment_name",
                )
            return found.id
        created = _create_experiment(api, name)
        if created is not None:
            return created
    raise httpapi.HTTPFailure(409, f"experiment '{name}' could not be created or found")


def _open_run(plan: TrackedPlan, api, tags: dict[str, str]) -> tuple[str | None, str, str, str]:
    """(experiment name, experiment id, run id, artifact URI) of the run created for this launch."""
    name = experiment_name(plan)
    try:
        if name:
            experiment_id = _get_or_create_experiment(api, name, lambda name: EARLY.experiment(plan, api, name))
        else:
            experiment_id = plan.job.public_env()["MLFLOW_EXPERIMENT_ID"]
        run_id, artifact_uri = api.create_run(experiment_id, plan.job.trackers.run_name or plan.job.name, tags)
    except httpapi.HTTPFailure as exc:
        raise _unreachable(api.display, exc) from None
    return name, experiment_id, run_id, artifact_uri


def _no_handshake(plan: TrackedPlan) -> str:
    root = store_root(tracking_uri(plan))
    host = host_path(plan.container.mounts, root) if root is not None else None
    if root is not None and host is None:
        return (f"MLflow: the file store {root} is in a named volume, which the runner does not open; the job creates its own run there "
                "(no run handshake: mount a host directory there for one run shared by every rank)")
    if root is not None and host != root:
        return (f"MLflow: the file store {root} is on the host at {host}, which is not a directory; the job creates its own run there "
                f"(no run handshake: create {host} for one run shared by every rank)")
    if root is not None:
        return (f"MLflow: the file store {root} is not a directory on this host; the job creates its own run there "
                "(no run handshake: create the directory, and mount it into the job, for one run shared by every rank)")
    return "MLflow: the tracking URI is not a server or a directory on this host; the job creates its own run (no run handshake)"


def _log_writer(plan: TrackedPlan, api, artifact_uri: str, out: Output):
    """What uploads the log at the end (its imports started now, while the job runs); None: no upload."""
    upload = bool(plan.job.trackers.settings.get("mlflow_upload_logs"))
    refusal = artifact_refusal(api.display, artifact_uri) if upload else None
    if refusal:
        upload = False
        out.warn(f"MLflow: the job output will not be uploaded: {refusal}")
    writer = store_writer(plan, api, artifact_uri) if upload else None
    if upload and writer is None:
        out.warn(f"MLflow: the job output will not be uploaded: the artifact store {artifact_uri} needs the MLflow client ({EXTRA_HINT})")
    preload_writer(writer, artifact_uri)  # while the job starts and runs
    return writer


def begin(plan: TrackedPlan, out: Output, hs: Handshake) -> Callable[[int, bytes], None] | None:
    api = tracking_api(plan)
    if api is None:
        out.notice(_no_handshake(plan))
        return None
    tags = {k: out.masker.mask(v) for k, v in EARLY.tags(plan).items()}  # names only; masked all the same
    name, experiment_id, run_id, artifact_uri = _open_run(plan, api, tags)
    hs.env["MLFLOW_RUN_ID"] = run_id
    hs.env["MLFLOW_EXPERIMENT_ID"] = experiment_id
    if name:
        hs.env["MLFLOW_EXPERIMENT_NAME"] = name
    url = api.run_path(experiment_id, run_id) if isinstance(api, FileStore) else _run_url(plan, api.display, experiment_id, run_id)
    hs.links["mlflow"] = url
    out.info(f"MLflow run '{plan.job.trackers.run_name or plan.job.name}': {url}")
    writer = _log_writer(plan, api, artifact_uri, out)

    def finish(exit_code: int, masked_output: bytes) -> None:
        """Close the run from the exit code and upload the (masked) output, side by side; never raises: the job already ran."""
        uploading = None
        if writer is not None:
            data = out.masker.mask_bytes(masked_output)
            uploading = threading.Thread(target=upload_log, args=(writer, run_id, artifact_uri, data, out, plan), daemon=True)
            uploading.start()
        _close_run(api, run_id, final_status(exit_code), out)
        if uploading is not None:
            uploading.join()

    return finish


def _close_run(api, run_id: str, status: str, out: Output) -> None:
    try:
        current = api.run_status(run_id)
        # The job's client may have closed the run FINISHED at exit (mlflow's atexit
        # does, even for a failing process): the exit code is the truth for failures.
        if current in ("RUNNING", "SCHEDULED") or (status != "FINISHED" and current == "FINISHED"):
            api.set_status(run_id, status)
    except httpapi.HTTPFailure as exc:
        out.warn(f"MLflow: could not close run {run_id} as {status}: {exc.detail}")
