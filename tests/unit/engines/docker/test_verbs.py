"""The Docker engine's ``ps``, ``logs``, ``down`` (runner.engines.docker.verbs) through the CLI against a
loopback daemon: only the runner's containers of this user, found by label; another's is left alone
(exit 1); a log the engine does not keep is not read; a log that is read is masked. The CLI runs in
this process (``runner.cli.main``), so the file stays fast."""

from __future__ import annotations

import json
import os
import struct
from urllib.parse import parse_qs, urlsplit

import pytest

from loopback_servers import Server

ME = str(os.getuid())
CANARY = "verbs-canary-5e6f7a"


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(data)) + data


def _labels(owner=ME, managed="true"):
    return {"io.primus-runner.managed": managed, "io.primus-runner.owner": owner, "io.primus-runner.job": "train"}


CONTAINERS = {
    "train": {"Id": "a" * 64, "Config": {"Labels": _labels()}, "State": {"Running": True}, "HostConfig": {"LogConfig": {"Type": "json-file"}}},
    "quiet": {"Id": "b" * 64, "Config": {"Labels": _labels()}, "State": {"Running": False}, "HostConfig": {"LogConfig": {"Type": "none"}}},
    "theirs": {"Id": "c" * 64, "Config": {"Labels": _labels(owner="4242")}, "State": {}, "HostConfig": {}},
    "redis": {"Id": "d" * 64, "Config": {"Labels": {}}, "State": {}, "HostConfig": {}},
}
LISTED = [{"Id": "a" * 64, "Names": ["/train"], "Image": "img:1", "State": "running", "Status": "Up 2 minutes",
           "Created": 1764770400, "Labels": _labels()},
          {"Id": "e" * 64, "Names": ["/done"], "Image": "img:2", "State": "exited", "Status": "Exited (3) 1 hour ago",
           "Created": 1764766800, "Labels": _labels()}]


def answer(server, request):
    url = urlsplit(request["path"])
    parts = url.path.split("/")
    json_ = {"Content-Type": "application/json"}
    if url.path == "/_ping":
        return 200, {"Api-Version": "1.43"}, b"OK"
    if url.path.endswith("/containers/json"):
        return 200, json_, json.dumps(LISTED).encode()
    if parts[-1] == "logs":
        return 200, {"Content-Type": "application/vnd.docker.multiplexed-stream"}, frame(1, f"loss 0.1 {CANARY}\n".encode())
    if request["method"] in ("POST", "DELETE"):
        return 204, {}, b""
    name = parts[-2] if parts[-1] == "json" else parts[-1]
    if name in CONTAINERS:
        return 200, json_, CONTAINERS[name]
    return 404, json_, {"message": f"No such container: {name}"}


@pytest.fixture(scope="module")
def _daemon():
    with Server(answer) as server:  # one for the file: closing a server takes its poll interval
        server.env = {"DOCKER_HOST": f"tcp://{server.netloc}"}
        yield server


@pytest.fixture
def daemon(_daemon, work, monkeypatch):
    """The daemon, the process's engine client made anew for it (the shared one is per process)."""
    from runner.clients.engine_api import shared

    _daemon.requests.clear()
    monkeypatch.setattr(shared, "_client", None)
    for key, value in _daemon.env.items():
        monkeypatch.setenv(key, value)
    return _daemon


@pytest.fixture
def main_cli(daemon, capsys):
    """``main_cli(*ARGS)``: ``primus-runner ARGS`` in this process, ``(rc, stdout, stderr)``."""
    from runner.cli import main

    def run(*args):
        capsys.readouterr()
        rc = main(list(args))
        out, err = capsys.readouterr()
        return rc, out, err
    return run


def _calls(server):
    return [f"{r['method']} {urlsplit(r['path']).path.split('/', 2)[-1]}" for r in server.requests if r["path"] != "/_ping"]


def _label_filter(server) -> list[str]:
    listing = next(r for r in server.requests if urlsplit(r["path"]).path.endswith("/containers/json"))
    return json.loads(parse_qs(urlsplit(listing["path"]).query)["filters"][0])["label"]


def test_ps_lists_this_users_runner_containers_as_a_table(main_cli, daemon):
    rc, out, err = main_cli("ps")
    assert rc == 0, err
    assert _label_filter(daemon) == ["io.primus-runner.managed=true", f"io.primus-runner.owner={ME}"]
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "ID", "IMAGE", "STATUS", "CREATED"]
    assert lines[1].split()[:3] == ["train", "a" * 12, "img:1"] and "Up 2 minutes" in lines[1]


def test_ps_json_and_all_users(main_cli, daemon):
    rc, out, _ = main_cli("ps", "--json", "--all-users")
    rows = json.loads(out)
    assert rc == 0 and _label_filter(daemon) == ["io.primus-runner.managed=true"]
    assert [(r["name"], r["status"], r["exit_code"], r["owner"]) for r in rows] == [("train", "running", None, ME), ("done", "exited", 3, ME)]
    assert rows[0]["created"] == "2025-12-03T14:00:00+00:00"


@pytest.mark.parametrize("name, message", [
    ("redis", "error: redis is not a primus-runner container (no label io.primus-runner.managed=true); it is left alone"),
    ("theirs", "error: theirs is another user's primus-runner container (owner uid 4242); it is left alone"),
    ("ghost", "error: no container named ghost"),
])
def test_down_leaves_what_is_not_this_users_runner_container_alone(main_cli, daemon, name, message):
    rc, _, err = main_cli("down", name)
    assert rc == 1 and err.startswith(message), err
    assert not any(call.startswith(("POST", "DELETE")) for call in _calls(daemon))


def test_down_stops_a_running_container_then_removes_it(main_cli, daemon):
    rc, _, err = main_cli("down", "train", "quiet")
    assert rc == 0, err
    assert [c for c in _calls(daemon) if not c.startswith("GET")] == [
        f"POST containers/{'a' * 64}/stop", f"DELETE containers/{'a' * 64}", f"DELETE containers/{'b' * 64}"]
    assert "removed train" in err and "removed quiet" in err


def test_down_all_users_acts_on_another_users_container(main_cli, daemon):
    assert main_cli("down", "theirs", "--all-users")[0] == 0
    assert f"DELETE containers/{'c' * 64}" in _calls(daemon)


def test_down_dry_run_removes_nothing(main_cli, daemon):
    rc, _, err = main_cli("down", "--all", "--dry-run")
    assert rc == 0 and "dry run: would remove 2: train, done" in err
    assert all(call.startswith("GET") for call in _calls(daemon))


def test_down_without_a_name_is_a_usage_error(main_cli, daemon):
    rc, _, err = main_cli("down")
    assert rc == 2 and "name the containers to remove, or use --all" in err


def test_logs_are_masked_with_the_secrets_in_scope(main_cli, daemon, work, monkeypatch):
    (work / ".primus.yaml").write_text("container:\n  options:\n    env: [HF_TOKEN]\n")
    monkeypatch.setenv("HF_TOKEN", CANARY)
    rc, out, err = main_cli("logs", "train", "--tail", "5")
    assert rc == 0, err
    assert out == "loss 0.1 ***\n" and CANARY not in out + err
    logs = next(r for r in daemon.requests if urlsplit(r["path"]).path.endswith("/logs"))
    assert parse_qs(urlsplit(logs["path"]).query) == {"stdout": ["1"], "stderr": ["1"], "follow": ["0"], "tail": ["5"]}


def test_logs_of_a_container_the_engine_keeps_no_log_of_is_refused(main_cli, daemon):
    rc, _, err = main_cli("logs", "quiet")
    assert rc == 1 and "quiet has no recorded run of yours, and the engine keeps no log of a job" in err
    assert not any(urlsplit(r["path"]).path.endswith("/logs") for r in daemon.requests)


def test_logs_with_a_negative_tail_is_a_usage_error(main_cli, daemon):
    rc, _, err = main_cli("logs", "train", "--tail", "-1")
    assert rc == 2 and "--tail takes a number of lines (0 or more)" in err
