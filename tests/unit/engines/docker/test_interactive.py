"""``up -i`` / ``-t`` (runner.engines.docker.interactive): the options refused together (exit 2), the wait
for the tty shim's ready marker on a real socket, and the user's stdin forwarded to the job's with its EOF."""

from __future__ import annotations

import os
import socket
import sys
import threading

import pytest

from runner.engines.docker import shim
from runner.engines.docker.interactive import attached, await_ready, check_terminal_options
from runner.errors import UsageError


@pytest.fixture
def stdin_pipe(monkeypatch):
    """sys.stdin is the read end of a pipe (not a terminal); the write end is returned."""
    read, write = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(read, "r"))
    yield write
    try:
        os.close(write)
    except OSError:  # the test closed it (the user's EOF)
        pass


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
