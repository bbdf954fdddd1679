"""``check --online`` and the W&B side of the handshake against stand-in HTTP endpoints on loopback.

No tracker service can run here for W&B, and the 401/timeout cases need a
server that misbehaves on purpose: these are small real HTTP servers on
127.0.0.1 that record what they were sent (to prove credentials travel only
in the Authorization header and are the forwarded ones).
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engines import assert_no_leak
from runner import tracker_runs
from runner.config import load_config
from runner.envfile import EnvFile
from runner.plan import LaunchFlags, build_plan
from runner.secrets import Masker
from runner.ui import Output


class StandIn:
    """A loopback HTTP server answering every request with (status, json body)."""

    def __init__(self, status: int = 200, body: dict | None = None):
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                outer.requests.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": self.rfile.read(length)}
                )
                data = json.dumps(body or {}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in():
    servers = []

    def make(status=200, body=None):
        servers.append(StandIn(status, body))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def planned_for(work: Path, trackers: str, host: dict):
    (work / ".primus.yaml").write_text("container:\n  options:\n    image: busybox\ntrackers:\n" + trackers)
    planned = build_plan(load_config(), ["true"], host, EnvFile(None), LaunchFlags(gpu="none"), name="job-1")
    assert not planned.problems, planned.problems
    return planned


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: connections are refused


def test_mlflow_401_is_unauthorised_and_token_only_in_the_header(work, stand_in, canary):
    server = stand_in(401, {"error_code": "UNAUTHENTICATED", "message": "bad token"})
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": server.url, "MLFLOW_TRACKING_TOKEN": canary["MLFLOW_TRACKING_TOKEN"]})
    [result] = tracker_runs.online_check(planned.plan, planned, timeout=5)
    assert result["tracker"] == "mlflow" and result["status"] == "unauthorised"
    [request] = server.requests
    assert request["path"].startswith("/api/2.0/mlflow/experiments/search")
    assert request["headers"]["Authorization"] == "Bearer " + canary["MLFLOW_TRACKING_TOKEN"]
    assert_no_leak(json.dumps(result), canary, "the check result")
    assert_no_leak(request["path"], canary, "the request URL")


def test_mlflow_basic_auth_from_username_and_password(work, stand_in, canary):
    server = stand_in(200, {"experiments": [{"experiment_id": "0", "name": "Default"}]})
    host = {"MLFLOW_TRACKING_URI": server.url, "MLFLOW_TRACKING_USERNAME": "alice", "MLFLOW_TRACKING_PASSWORD": canary["MLFLOW_TRACKING_PASSWORD"]}
    planned = planned_for(work, "  disable_mlflow: false\n", host)
    [result] = tracker_runs.online_check(planned.plan, planned, timeout=5)
    assert result["status"] == "reachable", result
    sent = server.requests[0]["headers"]["Authorization"]
    assert sent == "Basic " + base64.b64encode(f"alice:{canary['MLFLOW_TRACKING_PASSWORD']}".encode()).decode()


def test_mlflow_closed_port_is_unreachable_fast(work):
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{closed_port()}"})
    started = time.monotonic()
    [result] = tracker_runs.online_check(planned.plan, planned, timeout=2)
    assert result["status"] == "unreachable"
    assert time.monotonic() - started < 2


def test_timeout_is_honoured_when_the_server_never_answers(work):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections (kernel backlog), never answers
    try:
        planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{silent.getsockname()[1]}"})
        started = time.monotonic()
        [result] = tracker_runs.online_check(planned.plan, planned, timeout=1.0)
        elapsed = time.monotonic() - started
    finally:
        silent.close()
    assert result["status"] == "unreachable" and "timed out" in result["detail"].lower()
    assert 0.9 <= elapsed < 4


def test_mlflow_404_says_not_an_mlflow_server(work, stand_in):
    server = stand_in(404, {})
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": server.url})
    [result] = tracker_runs.online_check(planned.plan, planned, timeout=5)
    assert result["status"] == "unreachable" and "not an MLflow" in result["detail"]


def test_non_http_store_is_skipped(work):
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": "file:///out/mlruns"})
    [result] = tracker_runs.online_check(planned.plan, planned, timeout=5)
    assert result["status"] == "skipped"


def test_wandb_key_verified_against_viewer_query(work, stand_in, canary):
    server = stand_in(200, {"data": {"viewer": {"id": "u1", "username": "bob", "entity": "team-bob"}}})
    host = {"WANDB_API_KEY": canary["WANDB_API_KEY"], "WANDB_BASE_URL": server.url}
    planned = planned_for(work, "  disable_wandb: false\n", host)
    [result] = tracker_runs.online_check(planned.plan, planned, timeout=5)
    assert result == {"tracker": "wandb", "status": "reachable", "detail": f"{server.url} accepted WANDB_API_KEY (entity team-bob)"}
    [request] = server.requests
    assert request["method"] == "POST" and request["path"] == "/graphql" and b"viewer" in request["body"]
    assert request["headers"]["Authorization"] == "Basic " + base64.b64encode(f"api:{canary['WANDB_API_KEY']}".encode()).decode()
    assert_no_leak(request["body"], canary, "the GraphQL body")


@pytest.mark.parametrize("status,body", [(401, {"errors": [{"message": "unauthorized"}]}), (200, {"data": {"viewer": None}})])
def test_wandb_wrong_key_is_unauthorised(work, stand_in, canary, status, body):
    server = stand_in(status, body)
    planned = planned_for(work, "  disable_wandb: false\n", {"WANDB_API_KEY": canary["WANDB_API_KEY"], "WANDB_BASE_URL": server.url})
    [result] = tracker_runs.online_check(planned.plan, planned, timeout=5)
    assert result["status"] == "unauthorised"
    assert_no_leak(json.dumps(result), canary, "the check result")


def test_wandb_offline_is_skipped_and_both_trackers_reported(work, stand_in):
    server = stand_in(200, {"experiments": []})
    planned = planned_for(
        work,
        "  disable_wandb: false\n  disable_mlflow: false\n  disable_tensorboard: false\n  tensorboard_dir: /tb\n",
        {"WANDB_MODE": "offline", "MLFLOW_TRACKING_URI": server.url},
    )
    results = {r["tracker"]: r["status"] for r in tracker_runs.online_check(planned.plan, planned, timeout=5)}
    assert results == {"tensorboard": "skipped", "mlflow": "reachable", "wandb": "skipped"}


def test_password_in_the_uri_is_used_but_never_shown(work, stand_in, canary):
    server = stand_in(401, {})
    secret = canary["MLFLOW_TRACKING_PASSWORD"]
    uri = server.url.replace("http://", f"http://alice:{secret}@")
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": uri})
    [result] = tracker_runs.online_check(planned.plan, planned, timeout=5)
    assert result["status"] == "unauthorised"
    assert_no_leak(result["detail"], canary, "the check detail")
    assert server.requests[0]["headers"]["Authorization"].startswith("Basic ")


def test_wandb_run_id_is_pre_assigned_and_printed(work, capsys):
    planned = planned_for(
        work, "  disable_wandb: false\n  wandb_project: proj\n  wandb_save_dir: /out\n", {"WANDB_MODE": "offline"}
    )
    out = Output(masker=Masker())
    hs = tracker_runs.begin(planned.plan, out)
    run_id = hs.env["WANDB_RUN_ID"]
    assert len(run_id) == 8 and run_id.isalnum() and run_id.islower()
    assert hs.links["wandb"] == f"/out/wandb/offline-run-*-{run_id}"
    assert run_id in capsys.readouterr().err
    assert tracker_runs.begin(planned.plan, out).env["WANDB_RUN_ID"] != run_id  # fresh per launch
    hs.finish(0, b"")  # no W&B finisher: a no-op


def test_host_wandb_run_id_is_kept_for_resume(work):
    planned = planned_for(work, "  disable_wandb: false\n", {"WANDB_MODE": "offline", "WANDB_RUN_ID": "resume12"})
    hs = tracker_runs.begin(planned.plan, Output(masker=Masker()))
    assert hs.env["WANDB_RUN_ID"] == "resume12"
