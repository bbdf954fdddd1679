"""A container name or id is one Engine API path segment: ``logs ../../../etc/passwd`` (or any
name with ``/``, ``..``, ``?``) is a clean usage error before any request, never a walk up
the API path ending in an internal error. The engine is a loopback server recording requests."""

from __future__ import annotations

import pytest

from cli_runner import run_cli
from loopback_servers import Server


def engine(server, request):
    if request["path"].endswith("/_ping") or request["path"] == "/version" or request["path"].endswith("/version"):
        return 200, {"Api-Version": "1.43", "Content-Type": "application/json"}, {"ApiVersion": "1.43", "Version": "24.0.0"}
    return 404, {"Content-Type": "application/json"}, {"message": "no such container"}


@pytest.mark.parametrize("name", ["../../../etc/passwd", "a/../../x", "x?all=1", ".."])
@pytest.mark.parametrize("verb", ["logs", "down"])
def test_a_name_that_walks_the_api_path_is_a_usage_error(tmp_path, name, verb):
    server = Server(engine)
    try:
        result = run_cli(tmp_path, verb, name, env={"DOCKER_HOST": f"tcp://{server.netloc}"})
    finally:
        server.close()
    assert result.returncode == 2, result.stderr
    assert "not a container name or id" in result.stderr and "internal error" not in result.stderr
    assert "Traceback" not in result.stderr
    assert not any("/containers/" in r["path"] for r in server.requests), [r["path"] for r in server.requests]
