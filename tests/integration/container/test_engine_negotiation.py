"""API version negotiation against real engines: Docker 20.10 (1.41), Podman 4 (1.41), and a
daemon that refuses anything below 1.44 the way Docker 29 does.

The Docker 29 stand-in is a recording proxy (``loopback_servers.RecordingProxy``) on a unix socket
in front of the real daemon: it answers ``/_ping`` and ``/version`` as Docker 29 does (API 1.52,
minimum 1.44), refuses ``/v1.40``..``/v1.43`` with HTTP 400 and Docker 29's own message, and
forwards every other request (attach upgrades included) to the real daemon with the version
rewritten to 1.41.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from pathlib import Path

import pytest

from docker_helpers import Workspace, containers, unique
from engine_fixtures import assert_no_leak
from loopback_servers import Recorded, RecordingProxy

pytestmark = pytest.mark.docker

DOCKER_SOCKET = "/var/run/docker.sock"
DOCKER29_REFUSAL = ("client version {v} is too old. Minimum supported API version is 1.44, "
                    "please upgrade your client to a newer version")
_VERSIONED = re.compile(r"^/v(\d+)\.(\d+)(/.*)$")


class Docker29Proxy(RecordingProxy):
    """A recording stand-in for a current Docker daemon (see the module docstring).

    ``api`` / ``minimum``: what ``/_ping`` and ``/version`` report; ``ping_header``:
    whether ``/_ping`` carries ``Api-Version`` (old daemons did not: ``/version`` is then asked).
    """

    def __init__(self, path: Path, upstream: str = DOCKER_SOCKET, api: str = "1.52", minimum: str = "1.44",
                 ping_header: bool = True):
        self.api, self.minimum, self.ping_header = api, minimum, ping_header
        super().__init__(upstream, str(path), intercept=self._docker29)

    def paths(self, method: str | None = None) -> list[str]:
        """The target (path and query) of every request the client sent, in order."""
        return [r.target for r in list(self.requests) if method is None or r.method == method]

    def _docker29(self, request: Recorded) -> bytes | str:
        """Docker 29's own answer to ``/_ping``, ``/version`` and a version below 1.44; anything else is
        forwarded to the real daemon in the version it speaks."""
        match = _VERSIONED.match(request.path)
        bare = match.group(3) if match else request.path
        if match and (int(match.group(1)), int(match.group(2))) < (1, 44):
            used = f"{match.group(1)}.{match.group(2)}"
            return _response(400, "Bad Request", json.dumps({"message": DOCKER29_REFUSAL.format(v=used)}) + "\n", "application/json")
        if bare == "/_ping":
            extra = {"Api-Version": self.api} if self.ping_header else {}
            return _response(200, "OK", "OK" if request.method != "HEAD" else "", "text/plain; charset=utf-8", {
                **extra, "Server": "Docker/29.0.0 (linux)", "Ostype": "linux", "Docker-Experimental": "false"})
        if bare == "/version":
            body = {"Platform": {"Name": "Docker Engine - Community"},
                    "Components": [{"Name": "Engine", "Version": "29.0.0", "Details": {"ApiVersion": self.api, "MinAPIVersion": self.minimum}}],
                    "Version": "29.0.0", "ApiVersion": self.api, "MinAPIVersion": self.minimum, "Os": "linux", "Arch": "amd64"}
            return _response(200, "OK", json.dumps(body) + "\n", "application/json")
        return "/v1.41" + request.target[match.end(2):] if match else request.target


def _response(status: int, reason: str, body: str, ctype: str, headers: dict | None = None) -> bytes:
    data = body.encode()
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {ctype}", f"Content-Length: {len(data)}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


@pytest.fixture
def proxy_factory(tmp_path, docker_client):
    numbers = itertools.count()  # a short socket path: unix sockets allow 108 bytes
    with contextlib.ExitStack() as made:
        yield lambda **kw: made.enter_context(Docker29Proxy(tmp_path / f"docker29-{next(numbers)}.sock", **kw))


@pytest.fixture
def docker29(proxy_factory) -> Docker29Proxy:
    return proxy_factory()


@pytest.fixture(autouse=True)
def _no_forced_version(monkeypatch):
    monkeypatch.delenv("DOCKER_API_VERSION", raising=False)


# ------------------------------------------------------------------ real engines


def test_real_docker_20_10_negotiates_1_41(docker_client):
    from runner.clients.engine_api import Engine

    eng = Engine(host=f"unix://{DOCKER_SOCKET}")
    api = eng.negotiate()
    assert (api.api_version, api.daemon_api_version, api.kind, api.source) == ("1.41", "1.41", "docker", "ping")
    info = eng.describe()
    assert info["engine"] == "docker" and info["version"].startswith("20.10") and info["api_version"] == "1.41"
    assert info["host"] == f"unix://{DOCKER_SOCKET}"
    assert eng.containers(["io.primus-runner.negotiation-test=none"]) == []  # a versioned request works


def test_real_podman_negotiates_1_41_and_says_it_is_podman():
    from engine_fixtures import podman_or_missing

    from runner.clients.engine_api import Engine

    target = podman_or_missing()
    eng = Engine(host=target.host)
    assert eng.api_version == "1.41" and eng.kind == "podman" and eng.is_podman
    info = eng.describe()
    assert info["engine"] == "podman" and info["version"].startswith("4.") and info["api_version"] == "1.41"
    assert eng.capabilities.reports_oom is False


# ------------------------------------------------------------------ a Docker 29 daemon


def test_docker29_negotiates_1_45_and_never_sends_an_old_version(docker29):
    from runner.clients.engine_api import MAX_API_VERSION, Engine

    eng = Engine(host=docker29.url)
    api = eng.negotiate()
    assert (api.api_version, api.daemon_api_version, api.kind) == (MAX_API_VERSION, "1.52", "docker")
    assert MAX_API_VERSION >= "1.44"
    assert eng.containers(["io.primus-runner.negotiation-test=none"]) == []  # forwarded, answered by the real daemon
    info = eng.describe()
    assert (info["version"], info["api_version"], info["daemon_api_version"], info["min_api_version"]) == ("29.0.0", MAX_API_VERSION, "1.52", "1.44")
    assert docker29.paths() == ["/_ping", "/v1.45/containers/json?all=1&filters=%7B%22label%22%3A+%5B%22io.primus-runner.negotiation-test%3Dnone%22%5D%7D", "/v1.45/version"]


def test_one_negotiation_per_process_and_engine(docker29):
    from runner.clients.engine_api import Engine

    for _ in range(3):
        eng = Engine(host=docker29.url)
        eng.ping()
        eng.request("GET", "/info")
    # The first ping() is the negotiation itself (unversioned); later Engines reuse its outcome.
    assert docker29.paths() == ["/_ping", "/v1.45/info"] + ["/v1.45/_ping", "/v1.45/info"] * 2


def test_version_endpoint_when_ping_has_no_api_version_header(proxy_factory):
    from runner.clients.engine_api import Engine

    proxy = proxy_factory(api="1.44", ping_header=False)
    api = Engine(host=proxy.url).negotiate()
    assert (api.api_version, api.source) == ("1.44", "version")
    assert proxy.paths()[:2] == ["/_ping", "/version"]


def test_docker_api_version_is_respected_without_asking(docker29, monkeypatch):
    from runner.clients.engine_api import Engine

    monkeypatch.setenv("DOCKER_API_VERSION", "1.44")
    eng = Engine(host=docker29.url)
    assert eng.api_version == "1.44"
    eng.request("GET", "/info")
    assert docker29.paths() == ["/v1.44/info"]


def test_forced_old_version_against_docker29_is_exit_1_with_the_fix(docker29, monkeypatch):
    from runner.clients.engine_api import Engine
    from runner.errors import EngineUnavailable

    monkeypatch.setenv("DOCKER_API_VERSION", "1.41")
    with pytest.raises(EngineUnavailable) as info:
        Engine(host=docker29.url).request("GET", "/info")
    assert info.value.exit_code == 1
    assert "refuses API version 1.41 (its minimum is 1.44)" in info.value.message
    assert "Minimum supported API version is 1.44" in info.value.message  # the daemon's own words
    assert "unset DOCKER_API_VERSION" in info.value.hint


def test_malformed_docker_api_version_is_a_usage_error(docker29, monkeypatch):
    from runner.clients.engine_api import Engine
    from runner.errors import UsageError

    monkeypatch.setenv("DOCKER_API_VERSION", "latest")
    with pytest.raises(UsageError) as info:
        Engine(host=docker29.url).request("GET", "/info")
    assert info.value.exit_code == 2 and docker29.paths() == []


def test_daemon_older_than_1_41_is_exit_1_with_the_fix(proxy_factory):
    from runner.clients.engine_api import Engine
    from runner.errors import EngineUnavailable

    proxy = proxy_factory(api="1.40", minimum="1.12")
    with pytest.raises(EngineUnavailable) as info:
        Engine(host=proxy.url).request("GET", "/info")
    assert "speaks API 1.40; primus-runner needs 1.41 or newer" in info.value.message
    assert "upgrade the engine" in info.value.hint
    assert proxy.paths() == ["/_ping"]


def test_daemon_whose_minimum_is_above_what_the_runner_speaks(proxy_factory):
    from runner.clients.engine_api import MAX_API_VERSION, Engine
    from runner.errors import EngineUnavailable

    proxy = proxy_factory(api="1.60", minimum="1.50", ping_header=False)  # /version carries the minimum
    with pytest.raises(EngineUnavailable) as info:
        Engine(host=proxy.url).request("GET", "/info")
    assert f"refuses API version {MAX_API_VERSION} (its minimum is 1.50)" in info.value.message
    assert "upgrade primus-runner" in info.value.hint


# ------------------------------------------------------------------ the CLI through a Docker 29 daemon


@pytest.fixture
def ws(tmp_path, canary, busybox_image) -> Workspace:
    return Workspace(tmp_path, canary)


def test_up_through_docker29_exits_0_with_one_ping_and_no_old_version(ws, docker29):
    result = ws.run("up", "--gpu", "none", "--image", "primus-test/busybox:latest", "--", "true", env={"DOCKER_HOST": docker29.url})
    assert result.returncode == 0, result.stderr.decode()
    paths = docker29.paths()
    assert paths.count("/_ping") == 1, paths
    versions = {m.group(1) for m in map(re.compile(r"^/v(\d+\.\d+)/").match, paths) if m}
    assert versions == {"1.45"}, paths
    assert any("/containers/create" in p for p in paths) and any("/attach" in p for p in paths)


def test_up_through_docker29_delivers_secrets_through_the_shim(ws, docker29, canary):
    name = unique("neg")
    job = 'test "${#HF_TOKEN}" -gt 20 && echo "got $HF_TOKEN"'
    result = ws.run("up", "--name", name, "--", "sh", "-c", job, env={"DOCKER_HOST": docker29.url})
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"got ***\n"
    assert_no_leak(result.stdout + result.stderr, canary, "up through the Docker 29 proxy")
    assert containers(f"io.primus-runner.job={name}") == []


def test_up_with_a_forced_old_version_against_docker29_exits_1_without_a_traceback(ws, docker29):
    result = ws.run("up", "--", "true", env={"DOCKER_HOST": docker29.url, "DOCKER_API_VERSION": "1.41"})
    assert result.returncode == 1, result.stderr.decode()
    assert b"refuses API version 1.41" in result.stderr and b"unset DOCKER_API_VERSION" in result.stderr
    assert b"Traceback" not in result.stderr
    assert not [p for p in docker29.paths() if "/containers/create" in p and p.startswith("/v1.4") and not p.startswith("/v1.41")]
