"""``--name <secret>`` is refused before anything is created: no tracker run, no job directory."""

from __future__ import annotations

import uuid

import pytest

from engine_fixtures import assert_no_leak
from loopback_servers import Server


def recorder(server, request):
    return 200, {"Content-Type": "application/json"}, {"experiment": {"experiment_id": "1"}, "run": {"info": {"run_id": "r"}}}


@pytest.mark.parametrize("command", ["up", "submit"])
def test_a_secret_job_name_creates_nothing(work, command, cli):
    secret = f"canary-name-{uuid.uuid4().hex}"
    tracking = Server(recorder)
    try:
        (work / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n"
                                           "trackers:\n  disable_mlflow: false\n")
        result = cli(command, "--name", secret, "--", "true", cwd=work, env={"HF_TOKEN": secret, "MLFLOW_TRACKING_URI": tracking.url})
    finally:
        tracking.close()
    assert result.returncode == 2, result.stdout + result.stderr
    assert "job name" in result.stderr
    assert tracking.requests == [], "a tracker run was created"
    assert not (work / "primus-runs").exists(), "a job directory was created"
    assert_no_leak(result.stdout + result.stderr, [secret], "the refusal")
