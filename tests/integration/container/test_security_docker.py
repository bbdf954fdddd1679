"""Adversarial review against the real Docker daemon: the daemon's own log, /proc of every
process but the job's, the stdin shim with hostile bytes, and an interrupt mid-secret."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from docker_helpers import container_pids, force_remove, inspect, read_until, unique
from engine_fixtures import assert_no_leak

pytestmark = pytest.mark.docker

# printf-hostile bytes: %-formats, \c (stops %b output), octal/backslash escapes, a trailing backslash.
HOSTILE = "h0st%s%d%%\\c\\0101\\n$(id)`id`'\"\n=x==\\"


def test_attached_run_leaves_no_raw_output_with_the_daemon_and_no_value_in_any_other_process(ws, canary):
    """The job prints every secret in plain and encoded forms. While it runs: the daemon keeps
    no log of it (`docker logs` has nothing to show, no json log file), and no process other than
    the runner (given the values by the test) and the job itself holds a value in its command line
    or environment."""
    name = unique()
    forms = 'echo "$HF_TOKEN"; printf %s "$WANDB_API_KEY" | base64; printf "{\\"k\\": \\"%s\\"}\\n" "$DATABRICKS_TOKEN"'
    proc = ws.popen("up", "--name", name, "--", "sh", "-c", f"{forms}; echo ready; sleep 30")
    try:
        out = read_until(proc, b"ready")
        info = inspect(name)
        assert info["HostConfig"]["LogConfig"]["Type"] == "none"
        assert not info.get("LogPath")
        logs = subprocess.run(["docker", "logs", name], capture_output=True)
        assert_no_leak(logs.stdout + logs.stderr, canary, "docker logs of an attached job")
        job = container_pids(info["Id"])
        assert job, "the job's processes were not found"
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in job or int(entry) == proc.pid:
                continue
            for what in ("cmdline", "environ"):
                try:
                    data = Path(f"/proc/{entry}/{what}").read_bytes()
                except OSError:
                    continue
                if what == "environ" and int(entry) == os.getpid():
                    continue  # pytest itself holds the canaries it handed out
                assert_no_leak(data, canary, f"/proc/{entry}/{what} ({Path(f'/proc/{entry}/comm').read_text().strip()})")
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=60)
        assert_no_leak(out + rest, canary, "up's stdout")
        assert_no_leak(err, canary, "up's stderr")
        assert out.count(b"***") >= 3
    finally:
        proc.kill()
        force_remove(name)


def test_printf_hostile_value_reaches_the_job_byte_for_byte(ws, canary):
    """The shim decodes with printf %b: \\c, %, backslashes and newlines must arrive intact, unexecuted."""
    expected = hashlib.sha256(HOSTILE.encode()).hexdigest()
    result = ws.run("up", "--", "sh", "-c", 'printf %s "$HF_TOKEN" | sha256sum; printf %s "$HF_TOKEN"',
                    env={"HF_TOKEN": HOSTILE})
    assert result.returncode == 0, result.stderr.decode()
    assert expected.encode() in result.stdout
    assert result.stdout.endswith(b"***")  # printed whole, masked whole
    assert_no_leak(result.stdout + result.stderr, {"HF_TOKEN": HOSTILE, **canary}, "up with a hostile value")


def test_interrupt_after_a_secret_split_across_writes_never_prints_it(ws, canary):
    """The job writes a secret in two halves with a pause, no newline, then hangs; SIGINT to the
    runner. The held-back half is flushed through the masker, not raw."""
    value = canary["HF_TOKEN"]
    half = len(value) // 2
    job = f'printf "%s" "${{HF_TOKEN%"${{HF_TOKEN#{"?" * half}}}"}}"; sleep 0.5; printf "%s" "${{HF_TOKEN#{"?" * half}}}"; sleep 30'
    name = unique()
    proc = ws.popen("up", "--name", name, "--", "sh", "-c", f"echo go; {job}")
    try:
        out = read_until(proc, b"go\n")
        time.sleep(1.5)  # both halves written (the runner holds the unfinished one back)
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err.decode()
        assert (out + rest).endswith(b"go\n***"), out + rest
        assert_no_leak(out + rest + err, canary, "output of an interrupted run")
    finally:
        proc.kill()
        force_remove(name)
