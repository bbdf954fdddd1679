"""The official MLflow client (``mlflow.MlflowClient``, the ``mlflow`` extra), for what nothing
lighter speaks: Databricks OAuth and profile sign-ins, and the GCS, Azure and DBFS artifact
stores. Importing it costs seconds, more than the job ``true`` takes: it loads in a background
thread (``LOADER``), started beside the preflight or from the run's start.

The client, boto3 and the Databricks SDK read credentials from the process environment only:
``client_env`` puts the plan's tracker variables there for the duration of one call.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
import threading
import time
from typing import Iterator

from runner.errors import EngineUnavailable
from runner.secrets import Secret
from runner.trackers import httpapi
from runner.trackers.base import TrackedPlan
from runner.trackers.httpapi import BEGIN_TIMEOUT
from runner.trackers.mlflow.api import EXTRA_HINT, LOG_ARTIFACT, PROBE_DATA, Experiment, probe_dir
from runner.trackers.mlflow.endpoint import display, tracking_uri
from runner.trackers.mlflow.settings import CLIENT_NAMES
from runner.trackers.background import Background, silence_logs


def installed() -> bool:
    """True when the ``mlflow`` extra is installed (a path lookup: nothing is imported)."""
    try:
        return importlib.util.find_spec("mlflow") is not None
    except (ImportError, ValueError):
        return False


def _import_client():
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient

    silence_logs("mlflow", "databricks", "botocore", "boto3", "s3transfer", "urllib3", "azure", "google")
    return MlflowClient


LOADER = Background("mlflow-import", _import_client)  # imported once, so a launch does not wait the seconds it takes


def client_class():
    client = LOADER.wait()
    if client is None:
        raise EngineUnavailable(
            f"the MLflow client could not be imported ({type(LOADER.error).__name__}: {LOADER.error})",
            hint=f"reinstall the extra: {EXTRA_HINT}",
        )
    return client


_ENV_LOCK = threading.Lock()


@contextlib.contextmanager
def client_env(plan: TrackedPlan, extra: dict[str, str] | None = None) -> Iterator[None]:
    """The plan's tracker and store variables in ``os.environ`` for one client call, then the old environment back.

    MlflowClient, boto3 and the Databricks SDK read credentials from the
    process environment only; the plan may hold them from the env file. They
    are there while the call runs and no subprocess is started.
    """
    values: dict[str, str] = {d.name: d.value.reveal() if isinstance(d.value, Secret) else str(d.value)
                              for d in plan.job.forwarded if d.name in CLIENT_NAMES}
    values.update(extra or {})
    with _ENV_LOCK:
        saved = {name: os.environ.get(name) for name in set(CLIENT_NAMES) | set(values)}
        try:
            for name in CLIENT_NAMES:
                os.environ.pop(name, None)  # only what the plan forwards: the job's view, not a stray host value
            os.environ.update(values)
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            values.clear()


_STORE_PACKAGES = {"boto3": "boto3", "botocore": "boto3", "google": "google-cloud-storage", "azure": "azure-storage-blob"}


def failure(exc: BaseException) -> httpapi.HTTPFailure:
    """An exception from the client (or boto3, or a directory), as the REST path reports it (status 0 = no answer)."""
    if isinstance(exc, ModuleNotFoundError):
        top = (exc.name or "").split(".")[0]
        package = _STORE_PACKAGES.get(top, top)
        hint = EXTRA_HINT if package == "boto3" else f"pip install {package}"
        return httpapi.HTTPFailure(0, f"this artifact store needs {package}, which is not installed ({hint})", "NOT_INSTALLED")
    code = str(getattr(exc, "error_code", "") or "")
    status = {"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "RESOURCE_DOES_NOT_EXIST": 404, "RESOURCE_ALREADY_EXISTS": 409}.get(code, 0)
    if type(exc).__name__ == "RestException":
        try:
            status = exc.get_http_status_code() if status == 0 else status  # type: ignore[attr-defined]
        except Exception:
            pass
    text = " ".join(str(exc).split())
    if any(word in text for word in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "NoCredentialsError")):
        status = 403
    return httpapi.HTTPFailure(status, f"{type(exc).__name__}: {text}" if text else type(exc).__name__, code)


@contextlib.contextmanager
def _local_file(name: str, data: bytes) -> Iterator[str]:
    """``data`` as the file ``name`` in a temporary directory (0700: the masked output, briefly), for the client to log."""
    with tempfile.TemporaryDirectory(prefix="primus-runner-") as tmp:
        local = os.path.join(tmp, name)
        with open(local, "wb") as f:
            f.write(data)
        yield local


class Client:
    """``mlflow.MlflowClient``: every artifact store and Databricks sign-in the official client knows."""

    def __init__(self, plan: TrackedPlan, timeout: float = BEGIN_TIMEOUT, retries: int = 2):
        self.plan, self.uri = plan, tracking_uri(plan)
        self.display = display(plan)
        # The client's own retry/back-off is the only one; bounded so a dead server fails within ~timeout*(retries+1).
        self.extra = {"MLFLOW_HTTP_REQUEST_TIMEOUT": str(max(1, int(timeout))), "MLFLOW_HTTP_REQUEST_MAX_RETRIES": str(retries),
                      "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1", "AWS_MAX_ATTEMPTS": str(retries + 1),
                      "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}  # the client prints run URLs on stdout

    def _call(self, fn):
        client = client_class()
        try:
            with client_env(self.plan, self.extra):
                return fn(client(tracking_uri=self.uri))
        except Exception as exc:  # MlflowException, requests, boto3, the Databricks SDK: one shape
            raise failure(exc) from None

    def search(self) -> int:
        return len(self._call(lambda c: c.search_experiments(max_results=1)))

    def experiment(self, name: str) -> Experiment | None:
        found = self._call(lambda c: c.get_experiment_by_name(name))
        return None if found is None else Experiment(str(found.experiment_id), found.lifecycle_stage == "deleted", found.artifact_location or "")

    def create_experiment(self, name: str) -> str:
        return str(self._call(lambda c: c.create_experiment(name)))

    def create_run(self, experiment_id: str, run_name: str, tags: dict[str, str]) -> tuple[str, str]:
        run = self._call(lambda c: c.create_run(experiment_id, start_time=int(time.time() * 1000), tags=tags, run_name=run_name))
        return run.info.run_id, run.info.artifact_uri

    def run_status(self, run_id: str) -> str:
        return self._call(lambda c: c.get_run(run_id).info.status)

    def set_status(self, run_id: str, status: str) -> None:
        self._call(lambda c: c.set_terminated(run_id, status))

    def upload(self, run_id: str, artifact_uri: str, data: bytes) -> None:
        with _local_file(os.path.basename(LOG_ARTIFACT), data) as local:
            self._call(lambda _c: self._repository(artifact_uri).log_artifact(local, artifact_path=os.path.dirname(LOG_ARTIFACT)))

    def _repository(self, location: str):
        """The store at ``location`` as checked (not the run's artifact URI fetched again, which the server could change)."""
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
        from mlflow.utils.uri import add_databricks_profile_info_to_artifact_uri

        return get_artifact_repository(add_databricks_profile_info_to_artifact_uri(location, self.uri), tracking_uri=self.uri)

    def probe(self, location: str) -> None:
        def write_and_remove(_client) -> None:
            repo = self._repository(f"{location.rstrip('/')}/{probe_dir()}")
            with _local_file("probe.txt", PROBE_DATA) as local:
                repo.log_artifact(local)
            repo.delete_artifacts()

        self._call(write_and_remove)
