"""MLflow's ``check --online`` (and the handshake's requests) against stand-in HTTP endpoints on loopback.

The 401/timeout/redirect cases need a server that misbehaves on purpose: these are small real
HTTP servers on 127.0.0.1 that record what they were sent (to prove credentials travel only
in the Authorization header and are the forwarded ones).
"""

from __future__ import annotations

import base64
import importlib
import json

import pytest

from engine_fixtures import assert_no_leak, free_port
from loopback_servers import Server, make_cert, redirect_answer, silent_listener
from tracker_plans import planned_for

from runner.trackers import handshake as tracker_runs
from runner.secrets import Masker
from runner.ui import Output


def test_mlflow_401_is_unauthorised_and_token_only_in_the_header(work, stand_in, canary):
    server = stand_in(401, {"error_code": "UNAUTHENTICATED", "message": "bad token"})
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": server.url, "MLFLOW_TRACKING_TOKEN": canary["MLFLOW_TRACKING_TOKEN"]})
    [result] = tracker_runs.online_check(planned.plan, timeout=5)
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
    [result] = tracker_runs.online_check(planned.plan, timeout=5)
    assert result["status"] == "reachable", result
    sent = server.requests[0]["headers"]["Authorization"]
    assert sent == "Basic " + base64.b64encode(f"alice:{canary['MLFLOW_TRACKING_PASSWORD']}".encode()).decode()


def test_mlflow_closed_port_is_unreachable(work):
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{free_port()}"})
    [result] = tracker_runs.online_check(planned.plan, timeout=2)
    assert result["status"] == "unreachable" and "refused" in result["detail"].lower(), result


def test_timeout_is_honoured_when_the_server_never_answers(work):
    with silent_listener() as port:
        planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{port}"})
        [result] = tracker_runs.online_check(planned.plan, timeout=1.0)
    assert result["status"] == "unreachable" and "timed out" in result["detail"].lower()


def test_mlflow_404_says_not_an_mlflow_server(work, stand_in):
    server = stand_in(404, {})
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": server.url})
    [result] = tracker_runs.online_check(planned.plan, timeout=5)
    assert result["status"] == "unreachable" and "not an MLflow" in result["detail"]


def test_non_http_store_is_skipped(work):
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": "file:///out/mlruns"})
    [result] = tracker_runs.online_check(planned.plan, timeout=5)
    assert result["status"] == "skipped"


def test_wandb_offline_is_skipped_and_both_trackers_reported(work, stand_in):
    server = stand_in(200, {"experiments": []})
    planned = planned_for(
        work,
        "  disable_wandb: false\n  disable_mlflow: false\n  disable_tensorboard: false\n  tensorboard_dir: /tb\n",
        {"WANDB_MODE": "offline", "MLFLOW_TRACKING_URI": server.url},
    )
    results = {r["tracker"]: r["status"] for r in tracker_runs.online_check(planned.plan, timeout=5)}
    assert results == {"tensorboard": "skipped", "mlflow": "reachable", "wandb": "skipped"}


def test_password_in_the_uri_is_used_but_never_shown(work, stand_in, canary):
    server = stand_in(401, {})
    secret = canary["MLFLOW_TRACKING_PASSWORD"]
    uri = server.url.replace("http://", f"http://alice:{secret}@")
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": uri})
    [result] = tracker_runs.online_check(planned.plan, timeout=5)
    assert result["status"] == "unauthorised"
    assert_no_leak(result["detail"], canary, "the check detail")
    assert server.requests[0]["headers"]["Authorization"].startswith("Basic ")


@pytest.fixture
def redirector(servers):
    """``redirector(target, status=302)``: a loopback server redirecting every request to ``target`` + its path."""
    return lambda target, status=302: servers(redirect_answer(target, status))


# A credential only the request under test carries: in no environment, never printed by the test.
REDIRECT_TOKEN = "canary-redirect-token-51c0de9a7f3b4e21"
REDIRECT_PASSWORD = "canary-redirect-password-0b9e6d4c2a18f357"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("auth", ["bearer", "basic", "uri"])
def test_credentials_never_follow_a_redirect_to_another_origin(work, stand_in, redirector, status, auth):
    """The configured server redirects to a second server on another port (another origin)."""
    other = stand_in(200, {"experiments": [{"experiment_id": "0"}]})
    front = redirector(other.url, status)
    host = {"MLFLOW_TRACKING_URI": front.url}
    if auth == "bearer":
        host["MLFLOW_TRACKING_TOKEN"] = REDIRECT_TOKEN
    elif auth == "basic":
        host.update(MLFLOW_TRACKING_USERNAME="alice", MLFLOW_TRACKING_PASSWORD=REDIRECT_PASSWORD)
    else:
        host["MLFLOW_TRACKING_URI"] = front.url.replace("http://", f"http://alice:{REDIRECT_PASSWORD}@")
    planned = planned_for(work, "  disable_mlflow: false\n", host)
    [result] = tracker_runs.online_check(planned.plan, timeout=5)
    assert front.requests and "Authorization" in front.requests[0]["headers"]  # the configured origin got them
    for request in other.requests:  # the other origin never does (best: it is never contacted)
        assert "Authorization" not in request["headers"], "the Authorization header followed the redirect"
        assert_no_leak(json.dumps(request, default=str), [REDIRECT_TOKEN, REDIRECT_PASSWORD], "the other origin's request")
    assert result["status"] == "unreachable", result
    assert f"127.0.0.1:{other.server.server_address[1]}" in result["detail"]  # names where it was sent
    assert_no_leak(json.dumps(result), [REDIRECT_TOKEN, REDIRECT_PASSWORD], "the check result")


def test_handshake_stops_at_a_redirect_to_another_origin(work, stand_in, redirector, monkeypatch):
    """begin() (experiment, run) over plain HTTP: the redirect target never sees the token; the launch stops (exit 1)."""
    from runner.errors import EngineUnavailable

    monkeypatch.setattr(importlib.import_module("runner.trackers.mlflow.client"), "installed", lambda: False)  # the no-extra HTTP path
    other = stand_in(200, {"experiment": {"experiment_id": "1"}})
    front = redirector(other.url)
    host = {"MLFLOW_TRACKING_URI": front.url, "MLFLOW_TRACKING_TOKEN": REDIRECT_TOKEN}
    planned = planned_for(work, "  disable_mlflow: false\n", host)
    with pytest.raises(EngineUnavailable) as info:
        tracker_runs.begin(planned.plan, Output(masker=Masker()))
    assert f"127.0.0.1:{other.server.server_address[1]}" in info.value.message
    for request in other.requests:
        assert "Authorization" not in request["headers"], "the Authorization header followed the redirect"
    assert_no_leak(str(info.value.message) + str(info.value.hint), [REDIRECT_TOKEN], "the error")


def test_a_redirect_on_the_same_origin_is_followed_with_the_credentials(work):
    """A proxy prefix move (same scheme, host, port) keeps working."""
    def answer(_server, request):
        if request["path"].startswith("/old/"):
            return 302, {"Location": "/new/" + request["path"][len("/old/"):]}, b""
        return 200, {}, {"experiments": []}

    server = Server(answer)
    try:
        url = f"{server.url}/old"
        planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": url, "MLFLOW_TRACKING_TOKEN": REDIRECT_TOKEN})
        [result] = tracker_runs.online_check(planned.plan, timeout=5)
    finally:
        server.close()
    seen = [(request["path"], request["headers"].get("Authorization")) for request in server.requests]
    assert result["status"] == "reachable", result
    assert [path.split("/")[1] for path, _ in seen[:2]] == ["old", "new"]
    assert all(auth == "Bearer " + REDIRECT_TOKEN for _, auth in seen), "a same-origin request lost its credentials"


def test_databricks_oauth_or_profile_without_the_extra_names_the_extra(work, monkeypatch):
    from runner.errors import EngineUnavailable

    monkeypatch.setattr(importlib.import_module("runner.trackers.mlflow.client"), "installed", lambda: False)
    (work / ".databrickscfg").write_text("[team]\nhost = https://team.cloud\ntoken = canary-dbcfg-5a1e0c9d\n")
    for host in ({"MLFLOW_TRACKING_URI": "databricks://team"},
                 {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": "https://h", "DATABRICKS_CLIENT_ID": "c", "DATABRICKS_CLIENT_SECRET": "canary-oauth-7d2c"}):
        planned = planned_for(work, "  disable_mlflow: false\n", host)
        [result] = tracker_runs.online_check(planned.plan, timeout=5)
        assert result["status"] == "not-installed" and "primus-runner[mlflow]" in result["detail"], result
        with pytest.raises(EngineUnavailable) as info:
            tracker_runs.begin(planned.plan, Output(masker=Masker()))
        assert info.value.exit_code == 1 and "primus-runner[mlflow]" in info.value.hint


def test_https_never_downgrades_to_http_on_a_redirect(work, tmp_path, stand_in):
    """An https server (its own CA) that redirects to plain http on the same host: the token is not sent in clear."""
    tls = make_cert(tmp_path)
    plain = stand_in(200, {"experiments": []})
    front = Server(redirect_answer(plain.url), tls=tls)
    try:
        host = {"MLFLOW_TRACKING_URI": front.url, "MLFLOW_TRACKING_TOKEN": REDIRECT_TOKEN,
                "MLFLOW_TRACKING_SERVER_CERT_PATH": str(tls.cert)}
        planned = planned_for(work, "  disable_mlflow: false\n", host)
        [result] = tracker_runs.online_check(planned.plan, timeout=5)
    finally:
        front.close()
    assert front.requests, "the https server was reached"
    for request in plain.requests:
        assert "Authorization" not in request["headers"], "the token followed an https -> http redirect"
    assert result["status"] == "unreachable" and "http://127.0.0.1" in result["detail"], result


def test_a_store_only_the_mlflow_client_writes_to_names_the_extra(work, stand_in, monkeypatch, capsys):
    """Without the extra, a GCS artifact store cannot take the log: the run is closed all the same, and the
    warning names what to install (a directory or S3 store needs no MLflow client)."""
    monkeypatch.setattr(importlib.import_module("runner.trackers.mlflow.client"), "installed", lambda: False)
    server = stand_in(200, {"experiment": {"experiment_id": "1"},
                            "run": {"info": {"run_id": "r1", "artifact_uri": "gs://bucket/1/r1/artifacts", "status": "RUNNING"}}})
    planned = planned_for(work, "  disable_mlflow: false\n  mlflow_upload_logs: true\n", {"MLFLOW_TRACKING_URI": server.url})
    hs = tracker_runs.begin(planned.plan, Output(masker=Masker()))
    hs.finish(0, b"out\n")
    err = capsys.readouterr().err
    assert "not be uploaded" in err and "pip install 'primus-runner[mlflow]'" in err, err
    assert [r["path"].split("?")[0] for r in server.requests][-2:] == ["/api/2.0/mlflow/runs/get", "/api/2.0/mlflow/runs/update"]
