"""The interrupt guard (runner.engines.signals.SignalGuard) in a child process sent a real SIGINT/SIGTERM:
the first signal decides the exit code (130/143), the engine's ``handle`` runs for each, ``restore``
puts the old handlers back, and outside the main thread nothing is installed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import runner
from runner.engines.signals import SignalGuard

REPO = str(Path(runner.__file__).parent.parent)

# The child: a guard whose handle records each signal and cleans up on the first, like an engine's.
CHILD = r"""
import os, signal, sys, time
from runner.engines.signals import SignalGuard
from runner.ui.exits import EXIT_SIGNAL

marker, then = sys.argv[1], sys.argv[2]

class Guard(SignalGuard):
    def handle(self, signum):
        with open(marker, "a") as fh:
            fh.write(f"handled {signal.Signals(signum).name}\n")

guard = Guard().install()
print("ready", flush=True)
deadline = time.monotonic() + 10
while time.monotonic() < deadline and (guard.got is None or (then == "second" and open(marker).read().count("handled") < 2)):
    time.sleep(0.01)
if guard.got is None:
    sys.exit(99)
with open(marker, "a") as fh:
    fh.write("cleaned up\n")
guard.restore()
if then == "restored":
    print("restored", flush=True)
    time.sleep(10)  # the old (default) handler ends the process on the next signal
    sys.exit(98)
sys.exit(EXIT_SIGNAL[guard.got])
"""


def _child(tmp_path, then="exit"):
    marker = tmp_path / "marker"
    marker.write_text("")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(marker), then], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": REPO})
    assert proc.stdout.readline() == "ready\n"
    return proc, marker


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_the_first_signal_decides_the_exit_code_and_the_cleanup_runs(tmp_path, sig, code):
    proc, marker = _child(tmp_path)
    proc.send_signal(sig)
    assert proc.wait(timeout=10) == code
    assert marker.read_text() == f"handled {sig.name}\ncleaned up\n"


def test_a_second_signal_is_handled_but_the_first_keeps_the_exit_code(tmp_path):
    proc, marker = _child(tmp_path, then="second")
    proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 10
    while "handled" not in marker.read_text() and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 143
    assert marker.read_text() == "handled SIGTERM\nhandled SIGINT\ncleaned up\n"


def test_after_restore_the_old_handler_is_back(tmp_path):
    proc, marker = _child(tmp_path, then="restored")
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.readline() == "restored\n"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM  # the default action, not the guard
    assert marker.read_text() == "handled SIGINT\ncleaned up\n"


def test_outside_the_main_thread_nothing_is_installed():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    guards = []
    thread = threading.Thread(target=lambda: guards.append(SignalGuard().install()))
    thread.start()
    thread.join()
    assert guards[0]._old == {} and guards[0].got is None
    assert {sig: signal.getsignal(sig) for sig in before} == before
    guards[0].restore()  # nothing to restore: no error
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_install_and_restore_in_the_main_thread():
    before = signal.getsignal(signal.SIGTERM)
    guard = SignalGuard().install()
    try:
        assert signal.getsignal(signal.SIGTERM) == guard._handler and signal.getsignal(signal.SIGINT) == guard._handler
    finally:
        guard.restore()
    assert signal.getsignal(signal.SIGTERM) == before
