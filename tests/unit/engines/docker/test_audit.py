"""A container audited for the secrets in scope (runner.engines.docker.audit): its inspect data and its engine
log, names never values. The engine is a loopback daemon, reached through the runner's own client."""

from __future__ import annotations

import struct
from urllib.parse import urlsplit

import pytest

from loopback_servers import Server
from runner.clients.engine_api import Engine
from runner.engines.docker.audit import audit_container
from runner.secrets import secret_scope

CANARY = "audit-canary-51c0ffee"
SCOPE = secret_scope(extra=[("HF_TOKEN", CANARY)])


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(data)) + data


def info(log_type="json-file", tty=False, env=()):
    return {"Id": "c0ffee", "Config": {"Env": list(env), "Tty": tty, "Cmd": ["train"]},
            "HostConfig": {"LogConfig": {"Type": log_type}}}


@pytest.fixture
def daemon():
    """``daemon(inspect, log=b"", log_status=200)``: (a client of a loopback daemon answering those, the requests it got)."""
    made = []

    def make(inspect, log=b"", log_status=200):
        def answer(server, request):
            path = urlsplit(request["path"]).path
            if path == "/_ping":
                return 200, {"Api-Version": "1.43"}, b"OK"
            if path.endswith("/logs"):
                if log_status != 200:
                    return log_status, {"Content-Type": "application/json"}, {"message": "configured logging driver does not support reading"}
                return 200, {"Content-Type": "application/vnd.docker.raw-stream"}, log
            return 200, {"Content-Type": "application/json"}, inspect
        made.append(Server(answer))
        return Engine(host=f"tcp://{made[-1].netloc}"), made[-1].requests

    yield make
    for server in made:
        server.close()


def _paths(requests) -> list[str]:
    return [urlsplit(r["path"]).path.split("/", 2)[-1] for r in requests if r["path"] != "/_ping"]


def test_the_inspect_data_and_the_multiplexed_log_are_scanned(daemon):
    log = frame(1, b"step 1\n") + frame(2, f"token {CANARY[:6]}".encode()) + frame(2, f"{CANARY[6:]}\n".encode())
    eng, requests = daemon(info(env=["PATH=/bin", f"HF_TOKEN={CANARY}"]), log)
    findings = audit_container(eng, "my job/1", SCOPE)
    assert [(f.secret, f.location) for f in findings] == [("HF_TOKEN", "Config.Env[1]"), ("HF_TOKEN", "engine log:2")]
    assert _paths(requests) == ["containers/my%20job%2F1/json", "containers/c0ffee/logs"]
    assert all(CANARY not in str(f) and CANARY not in str(f.to_dict()) for f in findings)


def test_a_tty_log_is_read_as_it_is(daemon):
    eng, requests = daemon(info(tty=True), f"line\r\n{CANARY}\r\n".encode())
    assert [f.location for f in audit_container(eng, "c0ffee", SCOPE)] == ["engine log:2"]


def test_no_engine_log_nothing_in_scope_or_an_unreadable_driver_reads_no_log(daemon):
    eng, requests = daemon(info(log_type="none"), frame(1, CANARY.encode()))
    assert audit_container(eng, "c0ffee", SCOPE) == [] and _paths(requests) == ["containers/c0ffee/json"]
    eng, requests = daemon(info(env=[f"HF_TOKEN={CANARY}"]), frame(1, CANARY.encode()))
    assert audit_container(eng, "c0ffee", secret_scope()) == [] and _paths(requests) == ["containers/c0ffee/json"]
    eng, requests = daemon(info(), log_status=501)
    assert audit_container(eng, "c0ffee", SCOPE) == [] and _paths(requests)[-1] == "containers/c0ffee/logs"
