"""A launch that fails before its job starts keeps its reason: `runs show RUN` and `logs RUN` print
the error the user saw, on Docker and Podman."""

from __future__ import annotations

import json

import pytest

from docker_helpers import unique

pytestmark = pytest.mark.docker


def test_runs_show_and_logs_print_the_error_the_user_saw(ws):
    name = unique("failed-launch")
    image = f"127.0.0.1:9/primus-test/busybox:{unique('tag')}"  # nothing listens there: the pull fails
    launched = ws.run("up", "--name", name, "--image", image, "--", "true")
    assert launched.returncode == 1, launched.stderr
    said = [line for line in launched.stderr.decode().splitlines() if line.startswith(("error:", "  fix:"))]
    assert said and "127.0.0.1:9" in said[0], said
    (run,) = json.loads(ws.run("--json", "runs", "--name", name).stdout)
    shown = ws.run("runs", "show", run["id"])
    assert shown.returncode == 0 and said[0] in shown.stdout.decode(), shown.stdout
    logs = ws.run("logs", run["id"])
    assert logs.returncode == 0 and logs.stdout.decode().splitlines() == said, logs.stdout
    for result in (launched, shown, logs):
        assert b"internal error" not in result.stdout + result.stderr
