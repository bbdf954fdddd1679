"""The MLflow REST API over urllib against a stand-in server: experiments, runs, and artifacts only through
the server's proxy (``mlflow-artifacts:``)."""

from __future__ import annotations

import json

import pytest

from loopback_servers import Server, json_answer
from runner.trackers.httpapi import Endpoint, HTTPFailure
from runner.trackers.mlflow.api import LOG_ARTIFACT, PROBE_DATA
from runner.trackers.mlflow.rest import Rest


def rest(server) -> Rest:
    return Rest(Endpoint("mlflow", server.url, server.url, "none"), timeout=10)


def mlflow(server, request):
    path = request["path"]
    if path.startswith("/api/2.0/mlflow/experiments/search"):
        return 200, {}, {"experiments": [{"experiment_id": "0"}]}
    if path == "/api/2.0/mlflow/experiments/get-by-name?experiment_name=my+exp":
        return 200, {}, {"experiment": {"experiment_id": 5, "lifecycle_stage": "deleted", "artifact_location": "mlflow-artifacts:/5"}}
    if path.startswith("/api/2.0/mlflow/experiments/get-by-name"):
        return 404, {}, {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no such experiment"}
    if path == "/api/2.0/mlflow/runs/create":
        return 200, {}, {"run": {"info": {"run_id": "r1", "artifact_uri": "mlflow-artifacts:/5/r1/artifacts"}}}
    if path == "/api/2.0/mlflow/runs/get?run_id=r1":
        return 200, {}, {"run": {"info": {"status": "FINISHED"}}}
    return 200, {}, {}


def test_experiments_and_runs():
    with Server(mlflow) as server:
        api = rest(server)
        assert api.search() == 1
        found = api.experiment("my exp")
        assert (found.id, found.deleted, found.location) == ("5", True, "mlflow-artifacts:/5")
        assert api.experiment("absent") is None
        assert api.create_run("5", "job-1", {"mlflow.user": "ann", "primus.job": "x"}) == ("r1", "mlflow-artifacts:/5/r1/artifacts")
        assert api.run_status("r1") == "FINISHED"
        api.set_status("r1", "FAILED")
    created = json.loads(server.requests[3]["body"])
    assert created["experiment_id"] == "5" and created["run_name"] == "job-1" and created["user_id"] == "ann"
    assert created["tags"] == [{"key": "mlflow.user", "value": "ann"}, {"key": "primus.job", "value": "x"}]
    update = json.loads(server.requests[-1]["body"])
    assert update["run_id"] == "r1" and update["status"] == "FAILED" and update["end_time"] > 0


def test_an_error_other_than_not_found_is_raised():
    with Server(json_answer(500, {"error_code": "INTERNAL_ERROR", "message": "db down"})) as server:
        with pytest.raises(HTTPFailure, match="db down"):
            rest(server).experiment("x")
    with Server(json_answer(200, {"experiment": {"name": "no id"}})) as server:
        assert rest(server).experiment("x") is None


def test_the_log_and_the_probe_go_through_the_servers_proxy():
    with Server(json_answer(200)) as server:
        api = rest(server)
        api.upload("r1", "mlflow-artifacts:/5/r1/artifacts", b"masked log")
        api.probe("mlflow-artifacts:/5")
    put_log, put_probe, delete = server.requests
    assert (put_log["method"], put_log["path"], put_log["body"]) == (
        "PUT", f"/api/2.0/mlflow-artifacts/artifacts/5/r1/artifacts/{LOG_ARTIFACT}", b"masked log")
    assert put_probe["method"] == "PUT" and put_probe["body"] == PROBE_DATA
    probe_dir = put_probe["path"].removesuffix("/probe.txt")
    assert probe_dir.startswith("/api/2.0/mlflow-artifacts/artifacts/5/primus-runner-probe-")
    assert (delete["method"], delete["path"]) == ("DELETE", probe_dir)


@pytest.mark.parametrize("location", ["s3://bucket/5", "/srv/mlruns/5", "gs://b/5"])
def test_a_store_the_server_does_not_serve_needs_the_client_and_nothing_is_sent(location):
    with Server(json_answer(200)) as server:
        with pytest.raises(HTTPFailure) as err:
            rest(server).upload("r1", location, b"log")
    assert err.value.code == "NOT_INSTALLED" and "primus-runner[mlflow]" in err.value.detail and server.requests == []
