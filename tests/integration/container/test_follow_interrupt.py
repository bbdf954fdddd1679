"""Ctrl-C typed at ``logs NAME -f`` (a real SIGINT, on a real terminal): the follow ends as the
command's normal end (0, nothing more said, no traceback) and the container it followed keeps
running. Both followers: the run's own log (a run ``up --detach`` recorded) and the engine's
(a runner container whose engine keeps its log, as one made before the runner kept none)."""

from __future__ import annotations

import os
import subprocess

import pytest

from docker_helpers import BUSYBOX, LABEL, RUNNER, unique
from pty_session import PtySession
from runner.launch_plan import LABEL_OWNER

pytestmark = pytest.mark.docker

JOB = "echo first-line; while true; do sleep 1; echo tick; done"


def _start(ws, engine_host, name: str, record: bool) -> None:
    if record:
        started = ws.run("up", "--detach", "--name", name, "--", "sh", "-c", JOB)
    else:
        started = subprocess.run([*engine_host.cli, "run", "-d", "--name", name, "--label", f"{LABEL}=true",
                                  "--label", f"{LABEL_OWNER}={os.getuid()}", BUSYBOX, "sh", "-c", JOB], capture_output=True)
    assert started.returncode == 0, started.stderr.decode()


@pytest.mark.parametrize("record", [True, False], ids=["run-log", "engine-log"])
def test_ctrl_c_ends_logs_follow_with_0_and_the_container_keeps_running(ws, engine_host, record):
    name = unique("follow")
    try:
        _start(ws, engine_host, name, record)
        with PtySession([*RUNNER, "logs", name, "-f"], ws.cwd, ws.env) as session:
            session.expect("first-line")
            session.expect("tick")  # printed after the follow began: the interrupt lands in it
            session.sendcontrol("c")
            code = session.finish()
            shown = bytes(session.transcript)
        assert code == 0, "logs -f ends with 0 on Ctrl-C"
        assert b"Traceback" not in shown and b"error" not in shown.lower(), "nothing more is said"
        state = subprocess.run([*engine_host.cli, "inspect", "-f", "{{.State.Running}}", name], capture_output=True, text=True)
        assert state.stdout.strip() == "true", "the followed container keeps running"
    finally:
        subprocess.run([*engine_host.cli, "rm", "-f", name], capture_output=True)
