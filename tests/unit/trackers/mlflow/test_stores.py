"""Which way of speaking MLflow serves each store: the tracking store (REST, a file store on this host,
the client, or no handshake) and the artifact store the job's log goes to."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from runner.errors import EngineUnavailable
from runner.secrets import Secret
from runner.trackers.httpapi import Endpoint, HTTPFailure
from runner.trackers.mlflow import client as mlflow_client
from runner.trackers.mlflow import stores
from runner.trackers.mlflow.client import Client
from runner.trackers.mlflow.filestore import FileStore
from runner.trackers.mlflow.rest import Rest
from runner.ui import Output


def plan(uri: str, mounts=(), public=None, secret=None):
    public = {"MLFLOW_TRACKING_URI": uri, **(public or {})}
    secret = {k: Secret(v) for k, v in (secret or {}).items()}
    return SimpleNamespace(job=SimpleNamespace(forwarded=(), public_env=lambda: public, secret_env=lambda: secret),
                           container=SimpleNamespace(mounts=list(mounts)))


def test_a_file_store_on_this_host_through_the_jobs_mount(tmp_path):
    (tmp_path / "mlruns").mkdir()
    mount = SimpleNamespace(source=str(tmp_path), target="/workspace")
    api = stores.tracking_api(plan("file:///workspace/mlruns", [mount]))
    assert isinstance(api, FileStore) and api.root == str(tmp_path / "mlruns") and api.job_root == "/workspace/mlruns"
    assert stores.tracking_api(plan("file:///workspace/absent", [mount])) is None  # only the job would make it
    volume = SimpleNamespace(source="runs", target="/workspace", named_volume=True)
    assert stores.tracking_api(plan("file:///workspace/mlruns", [volume])) is None


@pytest.mark.parametrize("uri", ["sqlite:///mlflow.db", "mlruns", "postgresql://db/mlflow"])
def test_a_store_only_the_job_reaches_gets_no_handshake(uri):
    assert stores.tracking_api(plan(uri)) is None


def test_http_and_a_databricks_token_speak_rest():
    api = stores.tracking_api(plan("http://127.0.0.1:5000"), timeout=3)
    assert isinstance(api, Rest) and api.ep.base == "http://127.0.0.1:5000" and api.timeout == 3
    api = stores.tracking_api(plan("databricks", public={"DATABRICKS_HOST": "dbc.example"}, secret={"DATABRICKS_TOKEN": "t"}))
    assert isinstance(api, Rest) and api.ep.base == "https://dbc.example"


def test_a_databricks_oauth_sign_in_needs_the_client(monkeypatch):
    oauth = plan("databricks", public={"DATABRICKS_HOST": "dbc.example"})
    monkeypatch.setattr(mlflow_client, "installed", lambda: True)
    assert isinstance(stores.tracking_api(oauth), Client)
    monkeypatch.setattr(mlflow_client, "installed", lambda: False)
    with pytest.raises(EngineUnavailable) as err:
        stores.tracking_api(oauth)
    assert "nothing was launched" in err.value.message and "primus-runner[mlflow]" in err.value.hint


def test_the_artifact_store_writer(monkeypatch):
    p = plan("http://h")
    rest = Rest(Endpoint("mlflow", "http://h", "http://h", "none"))
    assert stores.writer(p, rest, "mlflow-artifacts:/1/r/artifacts") is rest  # the server's proxy
    assert isinstance(stores.writer(p, rest, "s3://bucket/1/r/artifacts"), stores.Direct)
    assert isinstance(stores.writer(p, rest, "/srv/mlruns/1/r/artifacts"), stores.Direct)
    filestore = FileStore("/host/mlruns", "/workspace/mlruns")
    assert stores.writer(p, filestore, "file:///workspace/mlruns/1/r/artifacts") is filestore
    monkeypatch.setattr(mlflow_client, "installed", lambda: False)
    assert stores.writer(p, rest, "gs://bucket/1") is None
    assert stores.writer(p, rest, "dbfs:/databricks/mlflow-tracking/1/r/artifacts") is None  # signed only on Databricks
    monkeypatch.setattr(mlflow_client, "installed", lambda: True)
    assert isinstance(stores.writer(p, rest, "gs://bucket/1"), Client)
    dbx = plan("databricks", public={"DATABRICKS_HOST": "dbc.example"}, secret={"DATABRICKS_TOKEN": "t"})
    assert stores.writer(dbx, rest, "dbfs:/databricks/mlflow-tracking/1/r/artifacts") is rest


def test_a_failed_upload_is_one_warning(capsys):
    class Refusing:
        def upload(self, run_id, artifact_uri, data):
            raise HTTPFailure(403, "HTTP 403: forbidden")

    stores.upload_log(Refusing(), "r1", "mlflow-artifacts:/1/r1/artifacts", b"log", Output(color=False))
    assert capsys.readouterr().err.strip() == (
        "warning: MLflow: the job output was not uploaded to mlflow-artifacts:/1/r1/artifacts: HTTP 403: forbidden")


def test_a_direct_write_failure_is_an_http_failure(tmp_path):
    (tmp_path / "a_file").write_text("")
    with pytest.raises(HTTPFailure) as err:
        stores.Direct(plan("http://h")).upload("r1", str(tmp_path / "a_file"), b"log")
    assert err.value.status == 0 and "NotADirectoryError" in err.value.detail
