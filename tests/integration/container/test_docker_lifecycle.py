"""Lifecycle against the real daemon: no orphans under SIGINT/SIGTERM; ps/logs/down touch only the runner's containers."""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import time

import pytest

from docker_helpers import BUSYBOX, LABEL, LABEL_JOB, containers, force_remove, unique
from engine_fixtures import assert_no_leak

pytestmark = pytest.mark.docker

RUNS_PER_SIGNAL = 20
BATCH = 2  # runs in flight at once (more would slow start-up and skew the moments)


# Podman: SIGTERM only (the runner's stop-and-remove path is the same for both signals; 40 launches each).
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, marks=pytest.mark.engines("docker")), signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_at_random_moments_leaves_no_container(ws, sig):
    seed = f"interrupt-{int(sig)}"  # reproducible: the same moments every run (printed on failure via the id)
    rng = random.Random(seed)
    # Random moments over start-up and run: [0, 1.5 s] past the time this machine
    # needs to get a job running (interpreter start-up alone can exceed 1 s under load).
    began = time.monotonic()
    assert ws.run("up", "--name", unique("warm"), "--", "true").returncode == 0
    span = (time.monotonic() - began) * 1.5 + 1.5
    delays = [rng.uniform(0, span) for _ in range(RUNS_PER_SIGNAL)]
    expected = {signal.SIGINT: {130, -signal.SIGINT}, signal.SIGTERM: {143, -signal.SIGTERM}}[sig]
    names = []
    startup = 0
    in_run = 0  # interrupted after the container existed: the stop-and-remove path
    for start in range(0, len(delays), BATCH):
        batch = []
        for delay in delays[start:start + BATCH]:
            name = unique("sig")
            names.append(name)
            # the secret shim is on the path too (HF_TOKEN is in scope)
            batch.append((name, delay, time.monotonic(), ws.popen("up", "--name", name, "--", "sleep", "30")))
        for name, delay, began, proc in batch:
            time.sleep(max(0.0, began + delay - time.monotonic()))
            proc.send_signal(sig)
        for name, delay, _, proc in batch:
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                pytest.fail(f"up did not exit within 60 s of {sig.name} at {delay:.2f} s")
            if b"Traceback" in err and b"KeyboardInterrupt" in err and not re.search(rb'cli\.py", line \d+, in (main|_dispatch)', err):
                # SIGINT while the interpreter was still importing the CLI (before any
                # runner code could install a handler): Python's own exit. Nothing was
                # launched; the orphan check below still covers it.
                startup += 1
                continue
            assert proc.returncode in expected, (delay, proc.returncode, err.decode()[-500:])
            assert b"Traceback" not in err, err.decode()[-2000:]
            in_run += b"stopped and removed" in err
    try:
        leftovers = {n: containers(f"{LABEL_JOB}={n}") for n in names}
        assert {n: c for n, c in leftovers.items() if c} == {}
        assert in_run >= 3, f"only {in_run} of {len(names)} runs were interrupted while the container existed ({startup} in start-up)"
    finally:
        force_remove(*[c for n in names for c in containers(f"{LABEL_JOB}={n}")] or ["none"])


def test_interrupt_with_keep_stops_but_keeps_the_container(ws):
    name = unique()
    proc = ws.popen("up", "--keep", "--name", name, "--", "sh", "-c", "echo ready; sleep 30")
    try:
        assert proc.stdout.readline() == b"ready\n"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err.decode()
        state = json.loads(subprocess.run(["docker", "inspect", name], capture_output=True, check=True).stdout)[0]["State"]
        assert state["Running"] is False
    finally:
        force_remove(name)


def test_ps_logs_down_touch_only_the_runners_containers(ws, canary):
    mine, foreign = unique("mine"), unique("foreign")
    subprocess.run(["docker", "run", "-d", "--name", foreign, BUSYBOX, "sleep", "60"], check=True, capture_output=True)
    try:
        started = ws.run("up", "--detach", "--name", mine, "--", "sh", "-c", 'echo "hello $HF_TOKEN"; echo oops >&2; sleep 60')
        assert started.returncode == 0, started.stderr.decode()

        ps = ws.run("--json", "ps")
        assert ps.returncode == 0
        rows = json.loads(ps.stdout)
        names = {r["name"] for r in rows}
        assert mine in names and foreign not in names
        row = next(r for r in rows if r["name"] == mine)
        assert set(row) >= {"name", "id", "image", "status", "exit_code", "created"}
        assert row["status"] == "running" and row["exit_code"] is None

        deadline = time.monotonic() + 30
        logs = ws.run("logs", mine)
        while b"hello" not in logs.stdout and time.monotonic() < deadline:
            time.sleep(0.2)
            logs = ws.run("logs", mine)
        assert logs.returncode == 0
        # Masked; the run's log is one stream, as the job's output on the runner's terminal.
        assert sorted(logs.stdout.splitlines()) == [b"hello ***", b"oops"], logs.stdout
        assert_no_leak(logs.stdout + logs.stderr, canary, "logs output")

        refused = ws.run("down", foreign)
        assert refused.returncode == 1 and b"not a primus-runner container" in refused.stderr
        assert ws.run("logs", foreign).returncode == 1

        down = ws.run("down", "--all")
        assert down.returncode == 0, down.stderr.decode()
        assert containers(f"{LABEL_JOB}={mine}") == []
        alive = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", foreign], capture_output=True, text=True)
        assert alive.stdout.strip() == "true"  # someone else's container is left alone
    finally:
        force_remove(mine, foreign)


def test_logs_follow_streams_until_the_job_ends(ws, canary):
    name = unique()
    started = ws.run("up", "--detach", "--name", name, "--", "sh", "-c", 'for i in 1 2 3; do echo "line $i $WANDB_API_KEY"; sleep 0.3; done')
    try:
        assert started.returncode == 0, started.stderr.decode()
        follow = ws.run("logs", "-f", name, timeout=60)
        assert follow.returncode == 0
        assert follow.stdout == b"line 1 ***\nline 2 ***\nline 3 ***\n"
        assert_no_leak(follow.stdout, canary, "logs -f")
    finally:
        force_remove(name)


def test_down_by_name_and_unknown_name(ws):
    name = unique()
    assert ws.run("up", "--detach", "--name", name, "--", "sleep", "60").returncode == 0
    try:
        down = ws.run("down", name)
        assert down.returncode == 0, down.stderr.decode()
        assert containers(f"{LABEL_JOB}={name}") == []
        missing = ws.run("down", unique("absent"))
        assert missing.returncode == 1 and b"no container named" in missing.stderr
    finally:
        force_remove(name)


@pytest.mark.engines("docker")  # in-process API with the process's cached engine: engine-agnostic
def test_remove_containers_by_extra_label(ws):
    from runner.engines import containers as backend

    a, b = unique(), unique()
    for name in (a, b):
        assert ws.run("up", "--detach", "--name", name, "--", "sleep", "60").returncode == 0
    try:
        assert backend.remove_containers({LABEL_JOB: a}) == 1
        assert containers(f"{LABEL_JOB}={a}") == [] and len(containers(f"{LABEL_JOB}={b}")) == 1
        assert containers(f"{LABEL}=true")  # b is still there
    finally:
        force_remove(a, b)
