"""The MLflow run handshake against a stand-in MLflow REST server: the run opened before launch (its
experiment found or created), the refusals that stop a launch, and the run closed from the exit code
with the masked output as its log."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from loopback_servers import Server
from runner.errors import CredentialRefused, EngineUnavailable
from runner.secrets import Masker, Secret
from runner.trackers.base import Handshake
from runner.trackers.mlflow.api import LOG_ARTIFACT
from runner.trackers.mlflow.handshake import begin, final_status
from runner.ui import Output

CANARY = "handshake-canary-8d2f6a13"


class MlflowStandIn:
    """Just enough of MLflow's REST API; ``experiments`` name -> answer, ``status`` of the one run."""

    def __init__(self, experiments=None, create_race=False, refuse=None):
        self.experiments = dict(experiments or {})
        self.create_race, self.refuse, self.status = create_race, refuse, "RUNNING"

    def __call__(self, server, request):
        path, body = request["path"], json.loads(request["body"] or b"{}") if request["method"] != "PUT" else None
        if self.refuse:
            return self.refuse, {}, {"error_code": "UNAUTHENTICATED", "message": "bad token"}
        if path.startswith("/api/2.0/mlflow/experiments/get-by-name"):
            name = path.split("experiment_name=")[1]
            if name in self.experiments:
                return 200, {}, {"experiment": self.experiments[name]}
            return 404, {}, {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "none"}
        if path == "/api/2.0/mlflow/experiments/create":
            self.experiments[body["name"]] = {"experiment_id": "9", "artifact_location": "mlflow-artifacts:/9"}
            if self.create_race:  # another launch made it first
                return 400, {}, {"error_code": "RESOURCE_ALREADY_EXISTS", "message": "exists"}
            return 200, {}, {"experiment_id": "9"}
        if path == "/api/2.0/mlflow/runs/create":
            return 200, {}, {"run": {"info": {"run_id": "r1", "artifact_uri": f"mlflow-artifacts:/{body['experiment_id']}/r1/artifacts"}}}
        if path.startswith("/api/2.0/mlflow/runs/get"):
            return 200, {}, {"run": {"info": {"status": self.status}}}
        if path == "/api/2.0/mlflow/runs/update":
            self.status = body["status"]
        return 200, {}, {}


def plan(url, experiment="exp", upload=True):
    public = {"MLFLOW_TRACKING_URI": url, "MLFLOW_EXPERIMENT_NAME": experiment}
    trackers = SimpleNamespace(framework="generic", config_hash="h", run_name=None, is_on=lambda t: t == "mlflow",
                               settings={"mlflow_upload_logs": upload})
    job = SimpleNamespace(name="job-1", trackers=trackers, forwarded=[], public_env=lambda: public, secret_env=lambda: {})
    return SimpleNamespace(job=job, container=SimpleNamespace(image="img", mounts=[]))


def out():
    return Output(color=False, masker=Masker([("HF_TOKEN", Secret(CANARY))]))


def requests_to(server, path):
    return [r for r in server.requests if r["path"].startswith(path)]


def test_the_run_is_opened_in_a_new_experiment_and_its_ids_handed_to_the_job(capsys):
    with Server(MlflowStandIn()) as server:
        hs = Handshake()
        finish = begin(plan(server.url), out(), hs)
        assert hs.env == {"MLFLOW_RUN_ID": "r1", "MLFLOW_EXPERIMENT_ID": "9", "MLFLOW_EXPERIMENT_NAME": "exp"}
        assert hs.links["mlflow"] == f"{server.url}/#/experiments/9/runs/r1"
        assert f"MLflow run 'job-1': {server.url}/#/experiments/9/runs/r1" in capsys.readouterr().err
        finish(1, f"step 1\ntoken {CANARY}\n".encode())
    [update] = requests_to(server, "/api/2.0/mlflow/runs/update")
    assert json.loads(update["body"])["status"] == "FAILED"
    [log] = requests_to(server, "/api/2.0/mlflow-artifacts/artifacts/9/r1/artifacts/")
    assert log["path"].endswith(LOG_ARTIFACT) and log["body"] == b"step 1\ntoken ***\n"
    assert CANARY not in server.raw()


def test_a_create_race_takes_the_experiment_the_other_launch_made():
    with Server(MlflowStandIn(create_race=True)) as server:
        hs = Handshake()
        begin(plan(server.url, upload=False), out(), hs)
    assert hs.env["MLFLOW_EXPERIMENT_ID"] == "9" and len(requests_to(server, "/api/2.0/mlflow/experiments/create")) == 1


def test_a_deleted_experiment_stops_the_launch():
    deleted = {"exp": {"experiment_id": "4", "lifecycle_stage": "deleted", "artifact_location": "x"}}
    with Server(MlflowStandIn(deleted)) as server:
        with pytest.raises(EngineUnavailable, match="MLflow experiment 'exp' is deleted"):
            begin(plan(server.url), out(), Handshake())
    assert requests_to(server, "/api/2.0/mlflow/runs/create") == []


@pytest.mark.parametrize("status, error", [(401, CredentialRefused), (403, CredentialRefused), (500, EngineUnavailable)])
def test_a_refusal_stops_the_launch_with_its_exit_code(status, error):
    with Server(MlflowStandIn(refuse=status)) as server:
        with pytest.raises(error) as err:
            begin(plan(server.url), out(), Handshake())
    assert "nothing was launched" in err.value.message


@pytest.mark.parametrize("job_closed, code, want", [("RUNNING", 0, "FINISHED"), ("RUNNING", 143, "KILLED"),
                                                    ("FINISHED", 2, "FAILED"), ("FAILED", 0, None)])
def test_the_run_is_closed_from_the_exit_code_unless_the_job_closed_it_truthfully(job_closed, code, want):
    stand_in = MlflowStandIn({"exp": {"experiment_id": "2", "artifact_location": "mlflow-artifacts:/2"}})
    with Server(stand_in) as server:
        finish = begin(plan(server.url, upload=False), out(), Handshake())
        stand_in.status = job_closed
        finish(code, b"")
    updates = [json.loads(r["body"])["status"] for r in requests_to(server, "/api/2.0/mlflow/runs/update")]
    assert updates == ([want] if want else [])
    assert requests_to(server, "/api/2.0/mlflow-artifacts") == []  # mlflow_upload_logs off: no log


def test_final_status():
    assert [final_status(c) for c in (0, 1, 130, 143, 137)] == ["FINISHED", "FAILED", "KILLED", "KILLED", "FAILED"]


def test_a_store_only_the_job_sees_gets_a_notice_and_no_run(capsys):
    assert begin(plan("sqlite:///mlflow.db"), out(), Handshake()) is None
    assert "the job creates its own run (no run handshake)" in capsys.readouterr().err
