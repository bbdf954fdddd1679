"""A detached job's keeper: a process of its own that writes the attach stream, masked, into the run's log."""

from __future__ import annotations

import socket
import struct
import time

from runner.engines.docker import keeper
from runner.runs.logdir import RunLog
from runner.secrets import Masker

CANARY = "keeper-canary-0d15ea5e"


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(data)) + data


def wait_for(path, want: bytes, timeout: float = 10.0) -> bytes:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = path.read_bytes()
        if data.endswith(want):
            return data
        time.sleep(0.05)
    return path.read_bytes()


def test_the_stream_is_demultiplexed_masked_and_kept_after_the_runner_lets_go(tmp_path):
    path = tmp_path / "output.log"
    log = RunLog(path, 1 << 20, warn=lambda message: None)
    ours, theirs = socket.socketpair()
    value = CANARY.encode()
    leftover = frame(1, b"first ")  # read by the runner with the attach response: kept first
    keeper.start(theirs, leftover, Masker([("TOKEN", CANARY)]), log)
    assert theirs.fileno() == -1  # the runner's copy is closed: only the keeper holds the stream
    ours.sendall(frame(1, b"out " + value[:8]) + frame(2, b"err " + value))
    time.sleep(0.2)  # the rest of the stdout secret arrives in a later read
    ours.sendall(frame(1, value[8:] + b" end\n"))
    ours.close()
    log.close()
    data = wait_for(path, b" end\n")
    assert value not in data
    assert data == b"first out err ****** end\n"  # stdout's split secret is held back, not shown in part
