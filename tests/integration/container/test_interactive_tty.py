"""`up -it`, `up -i` and `shell` driven as a user drives them: the CLI on a real pseudo-terminal
(`tests/pty_session.py`, the stdlib's pty), against Docker and Podman.

The canary is in the project's `.env` only: not in the runner's environment, not in any
argument. So the one way it can reach the terminal, the engine's inspect data or another
process is the path under test: the shim's payload through the job's terminal (its echo
would print the octal-escaped value) or the job's own output (masked).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from docker_helpers import RUNNER, container_pids, dotenv_workspace, unique
from engine_fixtures import PYTHON_IMAGE, assert_no_leak
from pty_session import PtySession

pytestmark = pytest.mark.docker
PROMPT = (r"# ", r"\$ ")  # root's and a user's shell prompt


def _shim_forms(value: str) -> list[str]:
    """The payload's octal escapes (what an echoing terminal would show), whole and a piece of
    the value's random part."""
    escaped = lambda text: "".join(f"\\0{b:03o}" for b in text.encode())  # noqa: E731
    return [escaped(value), escaped(value[-12:-4])]


@pytest.fixture
def ws(tmp_path, canary, busybox_image, engine_host):
    ws = dotenv_workspace(tmp_path, canary["HF_TOKEN"], engine_host)
    ws.names, ws.sessions = [], []
    yield ws
    for session in ws.sessions:
        session.close()
    if ws.names:
        subprocess.run([*engine_host.cli, "rm", "-f", *ws.names], capture_output=True)


def _spawn(ws, *args: str) -> PtySession:
    session = PtySession([*RUNNER, *args], ws.cwd, ws.env)
    ws.sessions.append(session)
    return session


def _no_leak_anywhere(data: bytes, ws, where: str) -> None:
    assert_no_leak(data, ws.canary, where)
    if any(form.encode() in data for form in _shim_forms(ws.canary["HF_TOKEN"])):
        pytest.fail(f"the shim's payload (HF_TOKEN's octal escapes) is in {where}", pytrace=False)


def _inspect(ws, name: str) -> dict:
    return json.loads(subprocess.run([*ws.cli, "inspect", name], capture_output=True, check=True).stdout)[0]


def _left(ws, name: str) -> list[str]:
    return subprocess.run([*ws.cli, "ps", "-aq", "--filter", f"name={name}"], capture_output=True, text=True).stdout.split()


def _other_processes(job_pids: set[int]) -> bytes:
    """Every process's command line, and the environment of all but the job's and pytest's own."""
    seen = bytearray()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        for what in ("cmdline",) + (() if pid in job_pids or pid == os.getpid() else ("environ",)):
            try:
                seen += Path(f"/proc/{entry}/{what}").read_bytes() + b"\n"
            except OSError:
                pass
    return bytes(seen)


def test_up_it_masks_returns_the_shells_code_and_the_secret_is_nowhere_else(ws):
    name = unique("interactive")
    ws.names = [name]
    child = _spawn(ws, "up", "-it", "--name", name, "--", "sh")
    child.expect(*PROMPT)
    info = _inspect(ws, name)  # while the shell runs
    assert info["Config"]["Tty"] is True and info["Config"]["OpenStdin"] is True
    _no_leak_anywhere(json.dumps(info).encode(), ws, f"{ws.cli[0]} inspect of the running container")
    job = container_pids(info["Id"])
    assert job, "the job's processes were not found"
    _no_leak_anywhere(_other_processes(job), ws, "the process list")
    child.sendline('stty size; echo "token=$HF_TOKEN"; exit 3')
    assert child.finish() == 3
    transcript = bytes(child.transcript)
    assert b"33 101" in transcript  # the user's window size
    assert b"token=***" in transcript  # the job has the secret, the terminal shows the mask
    _no_leak_anywhere(transcript, ws, "the terminal")
    files = ws.written_files()
    files.pop(str(ws.cwd / ".env"))
    assert any("primus-runner" in path for path in files), "no state was written"
    for path, data in files.items():
        _no_leak_anywhere(data, ws, path)
    assert _left(ws, name) == []


def test_shell_runs_the_images_bash_ctrl_c_reaches_the_job_and_the_container_goes(ws):
    name = unique("interactive")
    ws.names = [name]
    child = _spawn(ws, "shell", "--image", PYTHON_IMAGE, "--name", name)
    child.expect(*PROMPT)
    # The child prints, not bash: a foreground child holds the terminal before it runs (bash, still
    # forking, would wait out a Ctrl-C until its child ends), and the echo of the typed line reads sle""eping.
    child.sendline("sh -c 'echo sle\"\"eping; exec sleep 30'")
    child.expect(r"sleeping\r\n")  # the job's output, not the echo of what was typed: the sleep has begun
    child.sendcontrol("c")  # the terminal is raw: Ctrl-C interrupts the shell's sleep, not the runner
    child.expect(*PROMPT)
    child.sendline('echo "shell=$0 ${BASH_VERSION:+bash} $HF_TOKEN"; exit 5')
    assert child.finish() == 5
    assert b"shell=bash bash ***" in bytes(child.transcript)
    _no_leak_anywhere(bytes(child.transcript), ws, "the terminal")
    assert _left(ws, name) == []


def test_sigterm_to_the_runner_stops_and_removes_the_interactive_job(ws):
    name = unique("interactive")
    ws.names = [name]
    child = _spawn(ws, "up", "-it", "--name", name, "--", "sh")
    child.expect(*PROMPT)
    child.kill(signal.SIGTERM)
    assert child.finish() == 143
    assert _left(ws, name) == []
    _no_leak_anywhere(bytes(child.transcript), ws, "the terminal")


def test_i_without_a_terminal_pipes_stdin_to_the_job_after_the_secrets(ws):
    result = subprocess.run([*RUNNER, "up", "-i", "--name", unique("interactive"), "--", "sh", "-c",
                             'read line; echo "$line $HF_TOKEN"; cat'],
                            input=b"first line\nsecond line\n", cwd=ws.cwd, env=ws.env, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"first line ***\nsecond line\n"
    _no_leak_anywhere(result.stdout + result.stderr, ws, "up -i's output")


def test_t_alone_gives_the_job_a_terminal_and_shows_all_its_output(ws):
    """-t without -i (docker's meaning: a terminal, no keys forwarded). The secrets' stdin stays
    open: at its EOF Docker would end a terminal's output stream."""
    name = unique("interactive")
    ws.names = [name]
    child = _spawn(ws, "up", "-t", "--name", name, "--", "sh", "-c", 'sleep 0.5; [ -t 0 ] && echo on-a-tty; echo "done $HF_TOKEN"; exit 4')
    assert child.finish() == 4
    assert b"on-a-tty\r\ndone ***\r\n" in bytes(child.transcript)
    _no_leak_anywhere(bytes(child.transcript), ws, "the terminal")
    assert _left(ws, name) == []


def test_it_without_any_secret_has_no_shim_and_works_the_same(ws):
    (ws.cwd / ".env").unlink()
    name = unique("interactive")
    ws.names = [name]
    child = _spawn(ws, "up", "-it", "--name", name, "--", "sh")
    child.expect(*PROMPT)
    assert "primus-shim" not in json.dumps(_inspect(ws, name)["Config"])  # nothing to hand over: no shim
    child.sendline("echo typed-$((6 * 7)); exit 6")
    assert child.finish() == 6
    assert b"typed-42" in bytes(child.transcript)
    assert _left(ws, name) == []
