"""The MLflow REST API over ``urllib``, no import cost and no extra: every HTTP(S) tracking
server, and Databricks signed in with a token (the same API). Artifacts go only through the
server's proxy (``mlflow-artifacts:``) or, for a Databricks-managed run, a URL Databricks signs."""

from __future__ import annotations

import time
import urllib.parse

from runner.trackers import httpapi
from runner.trackers.mlflow import databricks_artifacts
from runner.trackers.httpapi import BEGIN_TIMEOUT, UPLOAD_TIMEOUT
from runner.trackers.mlflow.api import EXTRA_HINT, LOG_ARTIFACT, PROBE_DATA, Experiment, probe_dir


class Rest:
    """The MLflow REST API over urllib: no extra needed; artifacts only through the server's proxy."""

    def __init__(self, ep: httpapi.Endpoint, timeout: float = BEGIN_TIMEOUT):
        self.ep, self.display, self.timeout = ep, ep.display, timeout

    def _call(self, method: str, path: str, **kwargs):
        return httpapi.request(self.ep, method, "/api/2.0/" + path, timeout=kwargs.pop("timeout", self.timeout), **kwargs)

    def search(self) -> int:
        return len(self._call("GET", "mlflow/experiments/search?max_results=1").get("experiments", []) or [])

    def experiment(self, name: str) -> Experiment | None:
        try:
            answer = self._call("GET", "mlflow/experiments/get-by-name?" + urllib.parse.urlencode({"experiment_name": name}))
        except httpapi.HTTPFailure as exc:
            if exc.code == "RESOURCE_DOES_NOT_EXIST" or exc.status == 404:
                return None
            raise
        found = answer.get("experiment") if isinstance(answer, dict) else None
        if not isinstance(found, dict) or "experiment_id" not in found:
            return None
        return Experiment(str(found["experiment_id"]), found.get("lifecycle_stage") == "deleted", found.get("artifact_location", ""))

    def create_experiment(self, name: str) -> str:
        return str(self._call("POST", "mlflow/experiments/create", body={"name": name})["experiment_id"])

    def create_run(self, experiment_id: str, run_name: str, tags: dict[str, str]) -> tuple[str, str]:
        body = {"experiment_id": experiment_id, "run_name": run_name, "user_id": tags.get("mlflow.user", ""),
                "start_time": int(time.time() * 1000), "tags": [{"key": k, "value": v} for k, v in tags.items()]}
        info = self._call("POST", "mlflow/runs/create", body=body)["run"]["info"]
        return info["run_id"], info.get("artifact_uri", "")

    def run_status(self, run_id: str) -> str:
        return self._call("GET", f"mlflow/runs/get?run_id={urllib.parse.quote(run_id)}")["run"]["info"]["status"]

    def set_status(self, run_id: str, status: str) -> None:
        self._call("POST", "mlflow/runs/update", body={"run_id": run_id, "status": status, "end_time": int(time.time() * 1000)})

    def _proxied(self, uri: str) -> str:
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme != "mlflow-artifacts":
            raise httpapi.HTTPFailure(0, f"the artifact store ({parts.scheme or 'a path'}:) is not served by the tracking server, and "
                                      f"writing to it directly needs the MLflow client ({EXTRA_HINT})", "NOT_INSTALLED")
        return "mlflow-artifacts/artifacts/" + urllib.parse.quote(parts.path.strip("/"))

    def upload(self, run_id: str, artifact_uri: str, data: bytes) -> None:
        if databricks_artifacts.handles(artifact_uri):  # a Databricks-managed run: a signed URL of its cloud store
            databricks_artifacts.upload(self.ep, run_id, artifact_uri, data, max(self.timeout, UPLOAD_TIMEOUT))
            return
        self._call("PUT", f"{self._proxied(artifact_uri)}/{LOG_ARTIFACT}", raw=data, timeout=max(self.timeout, UPLOAD_TIMEOUT))

    def probe(self, location: str) -> None:
        path = f"{self._proxied(location)}/{probe_dir()}"
        self._call("PUT", f"{path}/probe.txt", raw=PROBE_DATA)
        self._call("DELETE", path)
