"""Is a run's runner alive: the lock it holds (dropped by the kernel, SIGKILL included), else its pid and start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from runner.runs import liveness


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
