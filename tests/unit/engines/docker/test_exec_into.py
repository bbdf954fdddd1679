"""``exec NAME -- CMD``: a command line holding a secret value in scope is refused before any engine is
asked (it would be in the exec's inspect and in ps). The exec itself, the job's secrets through the
shim, is proved against a real engine in tests/integration/container/test_exec_command.py."""

from __future__ import annotations

import pytest

from runner.engines.docker import exec_into
from runner.errors import UsageError
from runner.options import Selection, Sources
from runner.ui import Output

CANARY = "exec-canary-value-5e7d21ac"


@pytest.fixture
def nowhere(work, monkeypatch):
    """No engine to reach: a refusal after asking one would be EngineUnavailable, not UsageError."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.delenv("CONTAINER_HOST", raising=False)
    return work


@pytest.mark.parametrize("command", [("sh", "-c", f"curl -H 'Authorization: {CANARY}' x"), ("env", f"T={CANARY}")])
def test_a_secret_from_the_environment_on_the_command_line_is_refused(nowhere, monkeypatch, command):
    monkeypatch.setenv("HF_TOKEN", CANARY)
    with pytest.raises(UsageError) as err:
        exec_into.verb(Selection(names=("job",), command=command), Output(color=False))
    assert "the command holds a secret value" in err.value.message and CANARY not in str(err.value)


def test_a_secret_of_the_env_file_is_refused_too(nowhere):
    (nowhere / "job.env").write_text(f"MY_API_KEY={CANARY}\n")
    sel = Selection(sources=Sources(env_file=str(nowhere / "job.env")), names=("job",), command=("echo", CANARY))
    with pytest.raises(UsageError) as err:
        exec_into.verb(sel, Output(color=False))
    assert err.value.hint == "pass it through the job's environment instead" and err.value.exit_code == 2
