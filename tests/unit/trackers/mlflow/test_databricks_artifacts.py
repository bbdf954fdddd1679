"""The log of a Databricks-managed run: PUT to the URL Databricks signs, with its headers and never the
Databricks token (the signed URL is the cloud store's, another origin)."""

from __future__ import annotations

import json

import pytest

from loopback_servers import Server, json_answer
from runner.secrets import Secret
from runner.trackers.httpapi import Endpoint, HTTPFailure
from runner.trackers.mlflow import databricks_artifacts
from runner.trackers.mlflow.api import LOG_ARTIFACT

TOKEN = "dbx-canary-token-3c8e1f0a"
ARTIFACT_URI = "dbfs:/databricks/mlflow-tracking/1234/run9/artifacts/sub"


def databricks(signed: str, kind: str = "AWS_PRESIGNED_URL", headers=()):
    body = {"credential_infos": [{"type": kind, "signed_uri": signed, "headers": [{"name": k, "value": v} for k, v in headers]}]}
    return Server(json_answer(200, body))


def headers_of(request) -> dict:
    return {k.lower(): v for k, v in request["headers"].items()}


def upload(server, data=b"log"):
    ep = Endpoint("mlflow", server.url, server.url, "bearer", secret=Secret(TOKEN))
    databricks_artifacts.upload(ep, "run9", ARTIFACT_URI, data, timeout=10)


def test_the_log_goes_to_the_signed_url_without_the_token():
    with Server(json_answer(200)) as store:
        signed = f"{store.url}/bucket/{LOG_ARTIFACT}?X-Amz-Signature=abc"
        with databricks(signed, headers=[("x-amz-server-side-encryption", "AES256")]) as dbx:
            upload(dbx, b"masked log\n")
    [asked] = dbx.requests
    assert asked["path"] == "/api/2.0/mlflow/artifacts/credentials-for-write"
    assert json.loads(asked["body"]) == {"run_id": "run9", "path": [f"sub/{LOG_ARTIFACT}"]}
    assert asked["headers"]["Authorization"] == f"Bearer {TOKEN}"
    [put] = store.requests
    assert put["method"] == "PUT" and put["path"] == f"/bucket/{LOG_ARTIFACT}?X-Amz-Signature=abc" and put["body"] == b"masked log\n"
    sent = headers_of(put)
    assert sent["x-amz-server-side-encryption"] == "AES256"
    assert "authorization" not in sent and "content-type" not in sent
    assert TOKEN not in store.raw()


def test_an_azure_sas_url_gets_the_block_blob_header():
    with Server(json_answer(201)) as store, databricks(f"{store.url}/c/log?sig=1", "AZURE_SAS_URI") as dbx:
        upload(dbx)
    assert headers_of(store.requests[0])["x-ms-blob-type"] == "BlockBlob" and TOKEN not in store.raw()


@pytest.mark.parametrize("body, code", [
    ({"credential_infos": [{"type": "AZURE_ADLS_GEN2_SAS_URI", "signed_uri": "https://x/y"}]}, databricks_artifacts.NEEDS_CLIENT),
    ({"credential_infos": []}, ""),
    ({}, ""),
])
def test_an_upload_url_it_cannot_put_to_is_a_failure(body, code):
    with Server(json_answer(200, body)) as dbx:
        with pytest.raises(HTTPFailure) as err:
            upload(dbx)
    assert err.value.code == code and len(dbx.requests) == 1


def test_only_databricks_tracking_roots_are_handled():
    assert databricks_artifacts.handles(ARTIFACT_URI)
    assert not databricks_artifacts.handles("dbfs:/other/1") and not databricks_artifacts.handles("s3://b/k")
