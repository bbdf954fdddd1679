"""The MLflow client (the ``mlflow`` extra): the plan's variables in ``os.environ`` for one call only, its
failures in the REST path's shape, and its calls against a real file store."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from plan_factory import plan_from
from runner.config.envfile import load_env_file
from runner.plan import LaunchFlags
from runner.trackers.httpapi import HTTPFailure
from runner.trackers.mlflow.api import LOG_ARTIFACT
from runner.trackers.mlflow.client import Client, client_env, failure, installed


def test_client_env_holds_the_plans_values_only_during_the_call(work, monkeypatch):
    """The MLflow client reads credentials from os.environ: the plan's values (env file too) for one call, then the old ones."""
    secret = "canary-client-env-3e9d0c1b7a5f"
    (work / "job.env").write_text(f"AWS_SECRET_ACCESS_KEY={secret}\n")
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "host-value-kept")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    env_file = load_env_file(str(work / "job.env"))
    planned = plan_from(work, "container:\n  options:\n    image: busybox\ntrackers:\n  disable_mlflow: false\n",
                        host={"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"}, env_file=env_file, flags=LaunchFlags(gpu="none"), name="j")
    assert not planned.problems, planned.problems
    with client_env(planned.plan):
        assert os.environ["AWS_SECRET_ACCESS_KEY"] == secret
        assert os.environ["MLFLOW_TRACKING_URI"] == "http://127.0.0.1:9"
        assert "MLFLOW_TRACKING_TOKEN" not in os.environ  # not the plan's: the client sees what the job sees
    assert "AWS_SECRET_ACCESS_KEY" not in os.environ
    assert os.environ["MLFLOW_TRACKING_TOKEN"] == "host-value-kept"


class RestException(Exception):
    """Named as MLflow's: ``failure`` asks it for its HTTP status."""

    def __init__(self, text, status):
        super().__init__(text)
        self.status = status

    def get_http_status_code(self):
        return self.status


@pytest.mark.parametrize("exc, status, code", [
    (type("MlflowException", (Exception,), {"error_code": "PERMISSION_DENIED"})("no"), 403, "PERMISSION_DENIED"),
    (type("MlflowException", (Exception,), {"error_code": "RESOURCE_DOES_NOT_EXIST"})("gone"), 404, "RESOURCE_DOES_NOT_EXIST"),
    (RestException("bad gateway", 502), 502, ""),
    (Exception("An error occurred (InvalidAccessKeyId) when calling PutObject"), 403, ""),
    (ConnectionError("refused"), 0, ""),
])
def test_a_client_failure_in_the_rest_paths_shape(exc, status, code):
    found = failure(exc)
    assert isinstance(found, HTTPFailure) and (found.status, found.code) == (status, code)
    assert found.detail.startswith(type(exc).__name__ + ": ")


def test_a_missing_store_package_names_what_to_install():
    assert failure(ModuleNotFoundError("x", name="google.cloud.storage")).detail == (
        "this artifact store needs google-cloud-storage, which is not installed (pip install google-cloud-storage)")
    boto = failure(ModuleNotFoundError("x", name="botocore.client"))
    assert boto.code == "NOT_INSTALLED" and "primus-runner[mlflow]" in boto.detail


@pytest.mark.skipif(not installed(), reason="the mlflow extra is not installed")
def test_the_client_speaks_to_a_file_store(tmp_path):
    store = tmp_path / "mlruns"
    job = SimpleNamespace(forwarded=(), public_env=lambda: {"MLFLOW_TRACKING_URI": store.as_uri()}, secret_env=lambda: {})
    plan = SimpleNamespace(job=job)
    client = Client(plan, timeout=5)
    client.extra["MLFLOW_ALLOW_FILE_STORE"] = "true"  # MLflow 3 keeps its file store for those who ask
    experiment_id = client.create_experiment("exp")
    found = client.experiment("exp")
    assert found.id == experiment_id and not found.deleted and client.experiment("absent") is None
    run_id, artifact_uri = client.create_run(experiment_id, "job-1", {"primus-runner.job": "job-1"})
    client.upload(run_id, artifact_uri, b"masked log\n")
    client.set_status(run_id, "FAILED")
    assert client.run_status(run_id) == "FAILED"
    logged = store / experiment_id / run_id / "artifacts" / LOG_ARTIFACT
    assert logged.read_bytes() == b"masked log\n"
    client.probe(found.location)
    assert sorted(p.name for p in (store / experiment_id).iterdir() if p.name.startswith("primus-runner-probe")) == []
