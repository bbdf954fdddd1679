"""`exec` as `docker exec`: `-i`, `-t`, `-it`/`-ti` before or after NAME, and the command gets the job's
secrets the way the job got them (the stdin shim), its output masked, against Docker and Podman.

The canary is in the project's `.env` only: not in the runner's environment, not in any argument. So
the one way it can reach the exec'd command is the path under test, and it must show up nowhere else:
no command line, no inspect, no file the runner writes, not the container's logs.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from docker_helpers import RUNNER, dotenv_workspace, read_until, unique
from engine_fixtures import assert_no_leak
from pty_session import PtySession

pytestmark = pytest.mark.docker
PROMPT = (r"# ", r"\$ ")


@pytest.fixture
def job(tmp_path, canary, busybox_image, engine_host):
    ws = dotenv_workspace(tmp_path, canary["HF_TOKEN"], engine_host)
    ws.name = unique("exec-env")
    started = ws.run("up", "-d", "--name", ws.name, "--", "sleep", "120")
    assert started.returncode == 0, started.stderr.decode()
    yield ws
    subprocess.run([*engine_host.cli, "rm", "-f", ws.name], capture_output=True)


def _command_lines() -> bytes:
    seen = bytearray()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    seen += f.read() + b"\n"
            except OSError:
                pass
    return bytes(seen)


def _nowhere_else(ws, output: bytes) -> None:
    assert_no_leak(output, ws.canary, "exec's output")
    inspect = subprocess.run([*ws.cli, "inspect", ws.name], capture_output=True, check=True).stdout
    assert_no_leak(inspect, ws.canary, f"{ws.cli[0]} inspect of the job's container")
    logs = subprocess.run([*ws.cli, "logs", ws.name], capture_output=True)
    assert_no_leak(logs.stdout + logs.stderr, ws.canary, "the container's logs")
    files = ws.written_files()
    files.pop(str(ws.cwd / ".env"))
    for path, data in files.items():
        assert_no_leak(data, ws.canary, path)


def test_exec_gives_the_command_the_jobs_secret_masked_from_any_directory(job):
    # From another directory: the secret is the run's own (its directory's .env), not this one's.
    proc = subprocess.Popen([*RUNNER, "exec", job.name, "--", "sh", "-c", 'echo "v=$HF_TOKEN len=${#HF_TOKEN}"; sleep 3'],
                            cwd=job.root, env=job.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = read_until(proc, b"len=")
    lines = _command_lines()  # while the exec'd command runs
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert f"v=*** len={len(job.canary['HF_TOKEN'])}".encode() in seen + rest
    assert_no_leak(lines, job.canary, "the host's command lines")
    _nowhere_else(job, seen + rest + err)


@pytest.mark.parametrize("words", [("-it", "{name}"), ("{name}", "-ti", "--"), ("-i", "-t", "{name}")],
                         ids=["it-before", "ti-after", "i-t"])
def test_exec_it_gives_a_shell_with_the_jobs_secret(job, words):
    argv = [word.format(name=job.name) for word in words]
    child = PtySession([*RUNNER, "exec", *argv, "sh"], job.cwd, job.env)
    try:
        child.expect(*PROMPT)
        child.sendline('[ -t 0 ] && echo on-a-tty; echo "t=$HF_TOKEN"; exit 3')
        assert child.finish() == 3
    finally:
        child.close()
    transcript = bytes(child.transcript)
    assert b"on-a-tty" in transcript and b"t=***" in transcript
    escaped = "".join(f"\\0{b:03o}" for b in job.canary["HF_TOKEN"].encode())
    assert escaped.encode() not in transcript  # the shim's payload was not echoed by the terminal
    _nowhere_else(job, transcript)


def test_exec_i_pipes_stdin_after_the_secrets(job):
    result = subprocess.run([*RUNNER, "exec", "-i", job.name, "sh", "-c", 'read line; echo "$line $HF_TOKEN"'],
                            input=b"typed\n", cwd=job.cwd, env=job.env, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"typed ***\n"


def test_a_missing_program_is_named_in_the_users_words(job):
    result = job.run("exec", job.name, "pyhton3")
    assert result.returncode == 127
    assert result.stderr.decode().strip().endswith("command not found in the image: pyhton3")
    assert b"primus-shim" not in result.stderr
    assert json.loads(subprocess.run([*job.cli, "inspect", job.name], capture_output=True).stdout)[0]["State"]["Running"]
