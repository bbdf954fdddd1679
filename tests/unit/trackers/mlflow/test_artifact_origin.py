"""An MLflow server's artifact location naming another origin never receives MLFLOW_TRACKING_TOKEN.

A hostile tracking server on 127.0.0.1 answers the REST API like MLflow, but
its experiment's ``artifact_location`` and its run's ``artifact_uri`` point at
a collector (another port, or ``mlflow-artifacts://`` naming it). The token
exists only in the plan under test; the collector must never see it, neither
in ``check --online``'s write probe nor in the post-run log upload.
"""

from __future__ import annotations

import uuid

import pytest

from engine_fixtures import assert_no_leak
from loopback_servers import Server
from plan_factory import plan_from

from runner.secrets import Masker
from runner.trackers import handshake as tracker_runs
from runner.trackers.mlflow.artifact_origin import artifact_refusal
from runner.ui import Output

pytest.importorskip("mlflow")  # the leak is the official client's: it writes to whatever host a location names


def collect(server, request):
    return 200, {"Content-Type": "application/json"}, {}


def hostile_mlflow(location: str):
    """A tracking server whose experiment and runs store artifacts at ``location``."""
    def answer(server, request):
        path = request["path"].split("?")[0]
        if path.endswith("/experiments/search"):
            return 200, {}, {"experiments": [{"experiment_id": "1", "name": "Default"}]}
        if path.endswith("/experiments/get-by-name"):
            return 200, {}, {"experiment": {"experiment_id": "1", "name": "Default", "lifecycle_stage": "active",
                                            "artifact_location": location}}
        if path.endswith("/runs/create"):
            return 200, {}, {"run": {"info": {"run_id": "r1", "artifact_uri": location + "/r1/artifacts"}}}
        if path.endswith("/runs/get"):
            return 200, {}, {"run": {"info": {"run_id": "r1", "status": "RUNNING", "artifact_uri": location + "/r1/artifacts"},
                                     "data": {}}}
        return 200, {}, {}
    return answer


def planned(work, server_url: str, token: str, upload: bool = False):
    trackers = "  disable_mlflow: false\n" + ("  mlflow_upload_logs: true\n" if upload else "")
    host = {"MLFLOW_TRACKING_URI": server_url, "MLFLOW_TRACKING_TOKEN": token}
    made = plan_from(work, "container:\n  options:\n    image: busybox\ntrackers:\n" + trackers, host=host,
                     flags=["--gpu", "none"], name="job-1")
    assert not made.problems, made.problems
    return made.plan


def locations(collector: Server) -> list[str]:
    return [f"{collector.url}/artifacts", f"mlflow-artifacts://{collector.netloc}/artifacts"]


def hostile_pair(servers, kind: str) -> tuple[Server, Server]:
    """(collector, tracking server whose artifacts are at the collector, as a ``kind`` location)."""
    collector = servers(collect)
    location = dict(zip(["http", "mlflow-artifacts"], locations(collector)))[kind]
    return collector, servers(hostile_mlflow(location))


def token() -> str:
    return f"canary-artifact-origin-{uuid.uuid4().hex}"


@pytest.mark.parametrize("kind", ["http", "mlflow-artifacts"])
def test_check_online_never_probes_an_artifact_location_on_another_origin(work, servers, kind):
    secret, collector, tracking = token(), *hostile_pair(servers, kind)
    [result] = tracker_runs.online_check(planned(work, tracking.url, secret), timeout=5)
    assert tracking.requests, "the tracking server was asked"
    assert collector.requests == [], "the artifact location on another origin was contacted"
    assert_no_leak(collector.raw(), [secret], "the other origin's requests")
    assert result["status"] != "reachable" and collector.netloc in result["detail"], result
    assert_no_leak(str(result), [secret], "the check result")


@pytest.mark.parametrize("kind", ["http", "mlflow-artifacts"])
def test_log_upload_never_goes_to_an_artifact_uri_on_another_origin(work, servers, kind):
    secret, collector, tracking = token(), *hostile_pair(servers, kind)
    out = Output(masker=Masker())
    handshake = tracker_runs.begin(planned(work, tracking.url, secret, upload=True), out)
    handshake.finish(0, b"job output\n")
    assert collector.requests == [], "the run's artifact URI on another origin was written to"
    assert_no_leak(collector.raw(), [secret], "the other origin's requests")


def test_a_location_on_the_tracking_origin_is_allowed_and_downgrades_are_not(tmp_path):
    assert artifact_refusal("https://mlflow.example", "https://mlflow.example:443/api/2.0/mlflow-artifacts/x") is None
    assert artifact_refusal("https://mlflow.example", "mlflow-artifacts:/x") is None
    assert artifact_refusal("https://mlflow.example", "mlflow-artifacts://mlflow.example/x") is None
    assert artifact_refusal("https://mlflow.example", "s3://bucket/x") is None
    assert artifact_refusal("https://mlflow.example", "http://mlflow.example/x")  # a downgrade
    assert artifact_refusal("https://mlflow.example", "https://other.example/x")
    assert artifact_refusal("https://mlflow.example", "mlflow-artifacts://mlflow.example:8443/x")
