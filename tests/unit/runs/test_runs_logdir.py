"""The run's log: capped by rotation with the cap stated; the lock tells a killed runner apart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from runner.runs import liveness
from runner.runs.logdir import RunLog, read_lines, rotated


def test_the_log_keeps_at_most_its_cap_and_says_so(tmp_path):
    path = tmp_path / "output.log"
    log = RunLog(path, 256 << 10, warn=lambda m: None)  # 128 KiB halves
    line = b"x" * 1023 + b"\n"
    for _ in range(1000):  # ~1 MiB written
        log.add(line)
    log.close()
    assert path.stat().st_size + rotated(path).stat().st_size <= (256 << 10) + 200
    assert b"at most 0 MiB" in path.read_bytes()[:200] or b"earlier output is in output.log.1" in path.read_bytes()[:200]
    lines, _ = read_lines(path, 2)
    assert lines == [line, line]


def test_a_sigkilled_holder_of_the_lock_is_seen_as_gone(tmp_path):
    code = ("import sys,time; sys.path.insert(0, %r); from runner.runs import liveness; from pathlib import Path;"
            "fd = liveness.hold(Path(%r)); print('held' if fd is not None else 'no', flush=True); time.sleep(60)") % (
        os.path.dirname(os.path.dirname(liveness.__file__ + "/..")), str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    assert liveness.runner_alive(tmp_path, None, None) is True
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert liveness.runner_alive(tmp_path, None, None) is False


def test_without_a_lock_file_the_pid_and_its_start_decide(tmp_path):
    me = os.getpid()
    assert liveness.runner_alive(tmp_path, me, liveness.process_start(me)) is True
    assert liveness.runner_alive(tmp_path, me, "1") is False  # the same pid, another process
