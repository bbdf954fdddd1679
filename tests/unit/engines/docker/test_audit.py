"""A container audited for the secrets in scope: its inspect data and its engine log, names never values."""

from __future__ import annotations

import struct

from runner.clients.engine_api import ApiError
from runner.engines.docker.audit import audit_container
from runner.secrets import secret_scope

CANARY = "audit-canary-51c0ffee"
SCOPE = secret_scope(extra=[("HF_TOKEN", CANARY)])


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(data)) + data


class Engine:
    def __init__(self, info, log=(), log_error=None):
        self.info, self.log, self.log_error, self.paths = info, list(log), log_error, []

    def request(self, method, path):
        self.paths.append((method, path))
        return self.info

    def stream(self, path, query):
        self.paths.append(("STREAM", path))
        if self.log_error:
            raise self.log_error
        yield from self.log


def info(log_type="json-file", tty=False, env=()):
    return {"Id": "c0ffee", "Config": {"Env": list(env), "Tty": tty, "Cmd": ["train"]},
            "HostConfig": {"LogConfig": {"Type": log_type}}}


def test_the_inspect_data_and_the_multiplexed_log_are_scanned():
    log = [frame(1, b"step 1\n"), frame(2, f"token {CANARY[:6]}".encode()), frame(2, f"{CANARY[6:]}\n".encode())]
    eng = Engine(info(env=["PATH=/bin", f"HF_TOKEN={CANARY}"]), log)
    findings = audit_container(eng, "my job/1", SCOPE)
    assert [(f.secret, f.location) for f in findings] == [("HF_TOKEN", "Config.Env[1]"), ("HF_TOKEN", "engine log:2")]
    assert eng.paths == [("GET", "/containers/my%20job%2F1/json"), ("STREAM", "/containers/c0ffee/logs")]
    assert all(CANARY not in str(f) and CANARY not in str(f.to_dict()) for f in findings)


def test_a_tty_log_is_read_as_it_is():
    eng = Engine(info(tty=True), [b"line\r\n", f"{CANARY}\r\n".encode()])
    assert [f.location for f in audit_container(eng, "c0ffee", SCOPE)] == ["engine log:2"]


def test_no_engine_log_nothing_in_scope_or_an_unreadable_driver_reads_no_log():
    eng = Engine(info(log_type="none"), [frame(1, CANARY.encode())])
    assert audit_container(eng, "c0ffee", SCOPE) == [] and ("STREAM", "/containers/c0ffee/logs") not in eng.paths
    eng = Engine(info(env=[f"HF_TOKEN={CANARY}"]), [frame(1, CANARY.encode())])
    assert audit_container(eng, "c0ffee", secret_scope()) == [] and len(eng.paths) == 1
    eng = Engine(info(), log_error=ApiError(501, "configured logging driver does not support reading"))
    assert audit_container(eng, "c0ffee", SCOPE) == []
