"""The job's log into a Databricks-managed MLflow run over REST, as MLflow's Databricks artifact store
writes it: Databricks signs an upload URL for the path in the run (``credentials-for-write``), and the log
is PUT there with the headers that came with it and no Databricks credential (the URL is the cloud
store's, another origin). ADLS Gen2 URLs take a multi-call protocol: those go to the MLflow client."""

from __future__ import annotations

import urllib.parse

from runner.trackers import httpapi
from runner.trackers.mlflow.api import LOG_ARTIFACT

TRACKING_ROOT = "dbfs:/databricks/mlflow-tracking/"
# credential type -> headers a plain PUT adds to the ones Databricks gives
SIMPLE_PUT = {"AWS_PRESIGNED_URL": {}, "GCP_SIGNED_URL": {}, "AZURE_SAS_URI": {"x-ms-blob-type": "BlockBlob"}}
NEEDS_CLIENT = "NEEDS_CLIENT"


def handles(location: str) -> bool:
    return location.startswith(TRACKING_ROOT)


def _in_run(artifact_uri: str, run_id: str) -> str:
    """The log's path relative to the run's artifact root (``…/<run id>/artifacts[/sub]``)."""
    _, _, rest = artifact_uri.partition(f"/{run_id}/artifacts")
    return "/".join(p for p in (rest.strip("/"), LOG_ARTIFACT) if p)


def upload(ep: httpapi.Endpoint, run_id: str, artifact_uri: str, data: bytes, timeout: float) -> None:
    path = _in_run(artifact_uri, run_id)
    answer = httpapi.request(ep, "POST", "/api/2.0/mlflow/artifacts/credentials-for-write",
                             body={"run_id": run_id, "path": [path]}, timeout=timeout)
    infos = answer.get("credential_infos") if isinstance(answer, dict) else None
    if not infos or not isinstance(infos[0], dict) or not infos[0].get("signed_uri"):
        raise httpapi.HTTPFailure(0, "Databricks gave no upload URL for the log")
    info = infos[0]
    extra = SIMPLE_PUT.get(str(info.get("type")))
    if extra is None:
        raise httpapi.HTTPFailure(0, f"Databricks' upload URL is of type {info.get('type')}", NEEDS_CLIENT)
    given = {h["name"]: h["value"] for h in info.get("headers") or [] if isinstance(h, dict) and "name" in h}
    signed = str(info["signed_uri"])
    where = httpapi.show_origin(signed) if urllib.parse.urlsplit(signed).scheme in ("http", "https") else "the upload URL"
    anonymous = httpapi.Endpoint("mlflow", "", where, "none")  # the signed URL carries its own authority
    httpapi.request(anonymous, "PUT", signed, raw=data, timeout=timeout, json_answer=False,
                    headers={"Content-Type": "", "Accept": "", **extra, **given})
