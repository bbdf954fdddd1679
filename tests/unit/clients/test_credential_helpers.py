"""runner.clients.credential_helpers: a ``docker-credential-*`` helper runs through the one runner
of short-lived programs (``runner.subprocesses.run``): by its absolute path, ``get`` its only
argument, the server on its stdin, in a session of its own, bounded in time, its stderr never
shown. The fake helper ``docker-credential-canary`` records what it was given; its answer (and
its stderr) carry a canary secret that must reach nothing but the credential."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest

from cli_runner import run_in_clone
from engine_fixtures import assert_no_leak, free_port
from registry_helpers import write_docker_config
from runner import subprocesses
from runner.clients import credential_helpers
from runner.clients.registry import credentials_for
from runner.errors import ConfigError, EngineUnavailable

RECORDER = """#!{python}
import json, os, sys
request = sys.stdin.read()
with open({record!r}, "w") as fh:
    json.dump({{"argv": sys.argv, "stdin": request, "env": dict(os.environ),
               "own_session": os.getsid(0) == os.getpid(), "pid": os.getpid()}}, fh)
print("helper debug: the secret is " + {secret!r}, file=sys.stderr)
{tail}
"""
ANSWER = 'print(json.dumps({{"ServerURL": request, "Username": "alice", "Secret": {secret!r}}}))'


def canary() -> str:
    return f"canary-helper-{uuid.uuid4().hex}"


def plant(tmp_path: Path, secret: str, tail: str = ANSWER) -> tuple[Path, Path]:
    """``docker-credential-canary`` in ``tmp_path/bin``: (the helper, the file it records into)."""
    import sys

    record = tmp_path / "helper-record.json"
    helper = tmp_path / "bin" / "docker-credential-canary"
    helper.parent.mkdir(exist_ok=True)
    helper.write_text(RECORDER.format(python=sys.executable, record=str(record), secret=secret,
                                      tail=tail.format(secret=secret)))
    helper.chmod(0o700)
    return helper, record


@pytest.fixture
def user_config(tmp_path, monkeypatch):
    """The user's own Docker config (``credsStore: canary``) and PATH with the helper's directory first."""
    for name in ("REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "dc"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return write_docker_config(tmp_path / "dc", {"credsStore": "canary"})


def test_the_helper_runs_through_the_one_runner(tmp_path, user_config, monkeypatch):
    secret = canary()
    helper, record = plant(tmp_path, secret)
    calls = []
    real_run = subprocesses.run
    monkeypatch.setattr(subprocesses, "run", lambda argv, **kw: calls.append((list(argv), kw)) or real_run(argv, **kw))
    cred = credentials_for("reg.example:5000/team/img:1", {}.get)
    assert (cred.username, cred.password.reveal()) == ("alice", secret)
    assert cred.source == "credential helper docker-credential-canary"
    assert [argv for argv, _ in calls] == [[str(helper), "get"]]
    assert calls[0][1]["stdin"] == b"reg.example:5000" and calls[0][1]["timeout"] == credential_helpers.TIMEOUT
    seen = json.loads(record.read_text())
    assert seen["argv"] == [str(helper), "get"] and seen["stdin"] == "reg.example:5000" and seen["own_session"]
    assert_no_leak(repr(cred) + cred.describe(), [secret], "the credential's repr")


def test_the_hub_key_is_what_docker_login_stores(tmp_path, user_config):
    secret = canary()
    _, record = plant(tmp_path, secret)
    assert credentials_for("rocm/primus:v26.5", {}.get).password.reveal() == secret
    assert json.loads(record.read_text())["stdin"] == "https://index.docker.io/v1/"


def test_a_hung_helper_is_killed_within_the_bound_with_its_children(tmp_path, user_config, monkeypatch):
    """It starts a child that holds its pipes, then hangs: both are gone when the lookup gives up."""
    secret = canary()
    tail = ("import subprocess, time\n"
            "child = subprocess.Popen(['sleep', '300'])\n"
            "open({record!r} + '.child', 'w').write(str(child.pid))\n"
            "time.sleep(300)\n").format(record=str(tmp_path / "helper-record.json"))
    plant(tmp_path, secret, tail)
    monkeypatch.setattr(credential_helpers, "TIMEOUT", 1.0)
    started = time.monotonic()
    with pytest.raises(EngineUnavailable) as info:
        credentials_for("reg.example:5000/team/img:1", {}.get)
    assert time.monotonic() - started < 5
    text = f"{info.value} {info.value.hint}"
    assert info.value.exit_code == 1 and "docker-credential-canary did not answer within 1 s" in text
    assert str(user_config) in text
    assert_no_leak(text, [secret], "the timeout")
    pids = [json.loads((tmp_path / "helper-record.json").read_text())["pid"],
            int((tmp_path / "helper-record.json.child").read_text())]
    # SIGKILL went to the whole group before the lookup returned; the kernel ends a process
    # asynchronously, so a loaded machine may still show one for a moment.
    deadline = time.monotonic() + 2
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.02)
    for pid in pids:
        assert not _alive(pid), f"process {pid} the helper started outlived the lookup"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("tail, none", [
    ('print("credentials not found in native keychain"); sys.exit(1)', True),
    ('print(json.dumps({{"ServerURL": "", "Username": "", "Secret": ""}}))', True),
    ('print("{secret}"); sys.exit(0)', False),
    ('print(json.dumps({{"Username": 1, "Secret": "{secret}"}}))', False),
])
def test_nothing_held_is_no_login_and_a_bad_answer_is_refused_unquoted(tmp_path, user_config, tail, none):
    secret = canary()
    plant(tmp_path, secret, tail)
    if none:
        assert credentials_for("reg.example:5000/team/img:1", {}.get) is None
        return
    with pytest.raises(ConfigError) as info:
        credentials_for("reg.example:5000/team/img:1", {}.get)
    text = f"{info.value} {info.value.hint}"
    assert "not the helper protocol's JSON" in text
    assert_no_leak(text, [secret], "the refusal")


def test_a_helper_that_holds_nothing_leaves_the_files_own_login(tmp_path, user_config):
    """As docker pull: the store is asked first, then the file's ``auths`` entry."""
    import base64

    plant(tmp_path, canary(), 'print("credentials not found in native keychain"); sys.exit(1)')
    write_docker_config(tmp_path / "dc", {"credsStore": "canary",
                                          "auths": {"reg.example:5000": {"auth": base64.b64encode(b"bob:pw").decode()}}})
    cred = credentials_for("reg.example:5000/team/img:1", {}.get)
    assert cred.username == "bob" and cred.source == f"docker config {user_config}"


def test_check_shows_nothing_the_helper_printed_and_gives_it_no_env_file_value(tmp_path, clone, user_config):
    """Through the CLI: the helper's answer and its stderr hold the canary, the untrusted ``./.env`` another;
    the helper sees neither the env file's value nor anything but ``get``, and nothing it printed is shown."""
    secret, env_value = canary(), canary()
    helper, record = plant(tmp_path, secret)
    registry = f"127.0.0.1:{free_port()}"
    (clone / ".primus.yaml").write_text(f"container:\n  gpu: none\n  options:\n    image: {registry}/team/img:1\n")
    (clone / ".env").write_text(f"HF_TOKEN={env_value}\n")
    (clone / ".env").chmod(0o600)
    result = run_in_clone(clone, "check", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock",
                                               "DOCKER_CONFIG": os.environ["DOCKER_CONFIG"], "PATH": os.environ["PATH"]})
    seen = json.loads(record.read_text())
    assert seen["argv"] == [str(helper), "get"] and seen["stdin"] == registry and seen["own_session"]
    assert_no_leak(json.dumps(seen["env"]), [env_value], "the helper's environment")
    assert_no_leak(result.stdout + result.stderr, [secret, env_value], "check's output")
    assert result.returncode == 2 and f"registry {registry} is not reachable" in result.stderr  # check: a problem
