"""Under GitHub Actions, a server's words printed by the runner cannot carry workflow commands."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from loopback_servers import Server
from runner.ui import ci

INJECTED = "\n::set-env name=PRIMUS_PWNED::1\r::add-mask::everything\n  ::error::forged\n##[set-env name=OLD;]1\n"


def hostile_tracker(server, request):
    return 401, {"Content-Type": "application/json"}, {"error_code": "UNAUTHENTICATED", "message": "denied" + INJECTED}


def workflow_commands(text: str) -> list[str]:
    """Lines the Actions runner would run as commands (it splits on \\r and \\n and trims blanks)."""
    found = [line.strip() for line in re.split(r"\r\n|\r|\n", text) if line.strip().startswith("::")]
    return found + (["##["] if "##[" in text else [])


def test_a_tracker_answer_cannot_inject_workflow_commands(work):
    server = Server(hostile_tracker)
    try:
        (work / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\ntrackers:\n  disable_mlflow: false\n")
        env = {**os.environ, "HOME": str(work), "GITHUB_ACTIONS": "true", "CI": "true", "MLFLOW_TRACKING_URI": server.url}
        env.pop("PRIMUS_RUNNER_ADD_MASK", None)
        result = subprocess.run([sys.executable, "-m", "runner", "check", "--online", "--gpu", "none", "--image", "x"],
                                cwd=work, env=env, capture_output=True, text=True, timeout=60)
    finally:
        server.close()
    assert server.requests, "the hostile tracker was asked"
    assert "PRIMUS_PWNED" in result.stdout + result.stderr, "the server's text is shown (escaped)"
    commands = workflow_commands(result.stdout + result.stderr)
    # The runner's own annotations stay (the server's text inside them is escaped data, one line);
    # nothing else is a command.
    forged = [c for c in commands if not re.match(r"::(error|warning|notice)( [^:]*)?::|::(group|endgroup)::", c)
              or c == "::error::forged"]
    assert forged == [], forged


def test_neutralise_only_under_github_actions(monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert workflow_commands(ci.neutralise("ok" + INJECTED)) == []
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    assert ci.neutralise("ok" + INJECTED) == "ok" + INJECTED
