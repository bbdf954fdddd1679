"""``up -i`` / ``-t`` (runner.engines.docker.interactive): the options refused together (exit 2), the wait
for the tty shim's ready marker on a real socket, the user's stdin forwarded to the job's with its EOF, and
``attached`` with a terminal on a real pseudo-terminal: raw while attached, restored after, keys and window
sizes passed on."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import termios
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

import runner
from loopback_servers import ByteRecorder, Server
from pty_session import PtySession
from runner.engines.docker import shim
from runner.engines.docker.interactive import attached, await_ready, check_terminal_options
from runner.errors import UsageError


@pytest.mark.parametrize("interactive, tty, detach, dry_run, message", [
    (True, False, True, False, "-i/-t and --detach do not go together: a detached job has no terminal or stdin to attach"),
    (False, True, True, True, "-i/-t and --detach do not go together: a detached job has no terminal or stdin to attach"),
    (False, True, False, False, "the input device is not a TTY: -t/--tty (and shell) need a terminal on stdin"),
])
def test_refused_terminal_options_are_usage_errors(stdin_pipe, interactive, tty, detach, dry_run, message):
    with pytest.raises(UsageError) as info:
        check_terminal_options(interactive, tty, detach, dry_run)
    assert info.value.message == message and info.value.exit_code == 2


@pytest.mark.parametrize("interactive, tty, detach, dry_run", [
    (True, False, False, False),  # -i alone pipes stdin: no terminal needed
    (False, True, False, True),  # a dry run of -t from a script: nothing is attached
    (False, False, True, False),
])
def test_accepted_terminal_options(stdin_pipe, interactive, tty, detach, dry_run):
    check_terminal_options(interactive, tty, detach, dry_run)


def test_await_ready_returns_the_output_around_the_marker():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b"motd " + shim.READY[:5])
        threading.Timer(0.05, lambda: theirs.sendall(shim.READY[5:] + b"$ ")).start()
        assert await_ready(ours, b"<") == (True, b"<motd $ ")


def test_a_stream_that_ends_before_the_marker_is_not_ready():
    ours, theirs = socket.socketpair()
    with ours:
        theirs.sendall(b"stty: not found\n")
        theirs.close()
        assert await_ready(ours, b"") == (False, b"stty: not found\n")


def test_with_i_the_users_stdin_reaches_the_job_and_its_eof_too(stdin_pipe):
    ours, job = socket.socketpair()
    with ours, job:
        job.settimeout(5)
        with attached(None, "c0ffee", ours, interactive=True, tty=False):
            os.write(stdin_pipe, b"line one\n")
            os.close(stdin_pipe)
            received = b""
            while chunk := job.recv(65536):  # ends at the shutdown the user's EOF causes
                received += chunk
        assert received == b"line one\n"


def test_without_i_the_users_stdin_is_not_read(stdin_pipe):
    ours, job = socket.socketpair()
    with ours, job:
        job.settimeout(0.3)
        with attached(None, "c0ffee", ours, interactive=False, tty=False):
            os.write(stdin_pipe, b"not for the job\n")
            with pytest.raises(socket.timeout):
                job.recv(65536)
    assert os.read(sys.stdin.fileno(), 100) == b"not for the job\n"  # still in the pipe


# On the terminal: ``attached`` as ``watch`` holds it, the container's stream a connection to a ByteRecorder that
# the loop reads as the pump does, until SIGUSR1 ends it (the job's end). The terminal's settings before, during
# and after go to the report (the control characters as numbers, for JSON).
TERMINAL_JOB = r"""
import json, signal, socket, sys, termios
from runner.clients.engine_api import Engine
from runner.engines.docker.interactive import attached

host, port, report = sys.argv[1], int(sys.argv[2]), sys.argv[3]
settings = lambda: [*termios.tcgetattr(0)[:6], [c if isinstance(c, int) else ord(c) for c in termios.tcgetattr(0)[6]]]
before = settings()
job = socket.create_connection(("127.0.0.1", port))
signal.signal(signal.SIGUSR1, lambda *_: job.shutdown(socket.SHUT_RD))
with attached(Engine(host=host), "c1", job, interactive=True, tty=True):
    during = settings()
    sys.stdout.write("attached\n")
    sys.stdout.flush()
    while job.recv(65536):
        pass
job.close()
with open(report, "w") as f:
    json.dump({"before": before, "during": during, "after": settings()}, f)
"""
KEYS = b"echo typed-canary-7c1e\r\x03"  # Enter as a terminal sends it, then Ctrl-C: for the job, not the runner


def _until(condition, what: str, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _resizes(server: Server) -> list[tuple[str, int, int]]:
    """(path, rows, cols) of each resize the engine was asked for."""
    found = []
    for request in server.requests:
        url = urlsplit(request["path"])
        if url.path.endswith("/resize"):
            query = parse_qs(url.query)
            found.append((url.path.split("/", 2)[-1], int(query["h"][0]), int(query["w"][0])))
    return found


def test_attached_to_a_terminal_goes_raw_forwards_keys_follows_the_size_and_restores_the_terminal(tmp_path):
    def engine(_server, request):
        if request["path"] == "/_ping":
            return 200, {"Api-Version": "1.43"}, b"OK"
        return 200, {"Content-Type": "application/json"}, b""

    report = tmp_path / "report.json"
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(Path(runner.__file__).parents[1]), "HOME": str(tmp_path)}
    with Server(engine) as server, ByteRecorder() as recorder, PtySession(
            [sys.executable, "-c", TERMINAL_JOB, f"tcp://{server.netloc}", str(recorder.port), str(report)],
            tmp_path, env, rows=33, cols=101, timeout=10) as session:
        session.expect("attached")
        session.send(KEYS)
        session.resize(40, 120)
        _until(lambda: len(_resizes(server)) == 2, "the resize after SIGWINCH")
        session.kill(signal.SIGUSR1)
        assert session.finish() == 0
        _until(lambda: recorder.received, "the job's connection to end")
        assert recorder.received == [KEYS]  # byte for byte: no CR to NL, Ctrl-C not a signal
        assert _resizes(server) == [("containers/c1/resize", 33, 101), ("containers/c1/resize", 40, 120)]
    assert b"typed-canary" not in session.transcript  # raw: the user's terminal echoes nothing (the job's does)
    settings = json.loads(report.read_text())
    lflag = termios.ECHO | termios.ICANON | termios.ISIG
    assert settings["before"][3] & lflag == lflag and settings["during"][3] & lflag == 0
    assert settings["after"] == settings["before"]
