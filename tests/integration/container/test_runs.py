"""Runs on real engines: tracker outputs on the host, records and logs, the job cache, faults.

Each test has its own state directory (XDG_STATE_HOME) and cache (XDG_CACHE_HOME), so
what it finds there is its own runs' only.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from docker_helpers import CONFIG, Workspace, force_remove, unique
from engine_fixtures import assert_no_leak
from runs_helpers import TB_WRITER, WANDB_JOB, host_path, is_event_file, runs_json, sync_path
from job_images import job_image  # noqa: F401  (a fixture: the python image with the W&B client)

pytestmark = pytest.mark.docker

TRACKERS = """trackers:
  framework: generic
  disable_tensorboard: false
  tensorboard_dir: /tmp/tb
  disable_wandb: false
  wandb_project: runs-test
  wandb_save_dir: /tmp/wandb
"""


def _workspace(tmp_path: Path, canary: dict, engine_host=None, extra: str = "") -> Workspace:
    ws = Workspace(tmp_path, canary, CONFIG + extra)
    ws.env["XDG_STATE_HOME"] = str(tmp_path / "state")
    ws.without_host_trackers()
    if engine_host is not None:
        ws.env.update(engine_host.env)
    return ws


def _text(done) -> str:
    return done.stderr.decode() if isinstance(done.stderr, bytes) else done.stderr


def _state_files(tmp_path: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for base in (tmp_path / "state", tmp_path / "cache") if base.exists()
            for p in base.rglob("*") if p.is_file()}


@pytest.mark.engines("docker", "podman")
def test_tensorboard_and_offline_wandb_on_unmounted_paths_end_on_the_host(tmp_path, canary, engine_host, python_image, request):
    """Neither /tmp/tb nor /tmp/wandb is mounted: the runner mounts them from the run's directory and prints
    where they are; the `wandb sync` path it prints after the job exists. Docker runs the real W&B client
    (the job image has it); Podman's python image has none, so its job lays the offline run out as W&B does."""
    ws = _workspace(tmp_path, canary, engine_host, TRACKERS)
    name = unique("runs-trk")
    if engine_host.kind == "docker":
        image = request.getfixturevalue("job_image")
        wandb = WANDB_JOB
    else:
        image = python_image
        wandb = ("import os; d = os.path.join(os.environ['WANDB_DIR'], 'wandb', 'offline-run-20260101_000000-' + os.environ['WANDB_RUN_ID']);"
                 "os.makedirs(d); open(os.path.join(d, 'run-' + os.environ['WANDB_RUN_ID'] + '.wandb'), 'wb').write(b'w'); print('RUN', os.environ['WANDB_RUN_ID'])")
    job = f"python3 -c {shlex.quote(TB_WRITER)} /tmp/tb && python3 -c {shlex.quote(wandb)}"
    try:
        done = ws.run("up", "--image", image, "--name", name, "--env", "WANDB_MODE=offline", "--", "sh", "-c", job, timeout=300)
    finally:
        force_remove(name)
    err = _text(done)
    assert done.returncode == 0, err
    tb = host_path(err, "/tmp/tb")
    (event,) = list(tb.glob("events.out.tfevents.*"))
    assert is_event_file(event)
    assert str(tb).startswith(str(tmp_path / "state" / "primus-runner" / "runs"))
    run_id = done.stdout.decode().split("RUN ", 1)[1].split()[0]
    synced = sync_path(err)
    assert synced.is_dir() and synced.name.endswith(run_id) and (synced / f"run-{run_id}.wandb").exists()
    assert synced.parent.parent == host_path(err, "/tmp/wandb")
    (rec,) = runs_json(ws.run)
    assert rec["trackers"]["run_ids"]["wandb"] == run_id and rec["exit_code"] == 0 and rec["state"] == "succeeded"
    assert {o["path"]: o["host"] for o in rec["outputs"]} == {"/tmp/tb": str(tb), "/tmp/wandb": str(synced.parent.parent)}
    for path, data in {**_state_files(tmp_path), **{str(p): p.read_bytes() for p in tb.parent.rglob("*") if p.is_file()}}.items():
        assert_no_leak(data, canary, path)


def test_refuse_names_the_path_the_setting_and_the_fix_before_anything_starts(tmp_path, canary, busybox_image):
    ws = _workspace(tmp_path, canary, extra=TRACKERS.replace("  wandb_save_dir: /tmp/wandb\n", "") + "runs:\n  tracker_outputs: refuse\n")
    name = unique("runs-refuse")
    done = ws.run("up", "--name", name, "--", "true")
    err = _text(done)
    assert done.returncode == 2, err
    assert "/tmp/tb" in err and "trackers.tensorboard_dir" in err and "--volume" in err and "tracker_outputs: mount" in err
    assert subprocess.run(["docker", "ps", "-aq", "--filter", f"name={name}"], capture_output=True, text=True).stdout == ""
    assert not (tmp_path / "state" / "primus-runner" / "runs").exists() or not list((tmp_path / "state" / "primus-runner" / "runs").iterdir())


@pytest.mark.engines("docker", "podman")
def test_a_second_launch_of_the_image_finds_what_the_first_wrote_in_the_triton_cache(tmp_path, canary, engine_host, busybox_image):
    ws = _workspace(tmp_path, canary, engine_host)
    marker = unique("kernel")
    first = ws.run("up", "--", "sh", "-c", f'echo {marker} > "$TRITON_CACHE_DIR/compiled.bin"; echo "$HF_HUB_CACHE $MIOPEN_USER_DB_PATH"')
    assert first.returncode == 0, _text(first)
    second = ws.run("up", "--", "sh", "-c", 'cat "$TRITON_CACHE_DIR/compiled.bin"')
    assert second.returncode == 0 and second.stdout.decode().strip() == marker, _text(second)
    cached = list((tmp_path / "cache" / "primus-runner" / "job-cache").glob("*/triton/compiled.bin"))
    assert len(cached) == 1 and cached[0].read_text().strip() == marker
    off = ws.run("--config", str(_write(tmp_path / "off.yaml", "cache:\n  enabled: false\n")), "up", "--", "sh", "-c",
                 'cat "$TRITON_CACHE_DIR/compiled.bin" 2>/dev/null || echo none; echo "[${TRITON_CACHE_DIR:-unset}]"')
    assert off.stdout.decode().split() == ["none", "[unset]"], _text(off)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_logs_of_a_finished_attached_and_detached_up_from_another_directory(tmp_path, canary, busybox_image):
    ws = _workspace(tmp_path, canary)
    attached, detached = unique("runs-att"), unique("runs-det")
    secret = canary["HF_TOKEN"]
    one = ws.run("up", "--name", attached, "--", "sh", "-c", 'echo "attached line one"; echo "hf=$HF_TOKEN"; echo err >&2; exit 3')
    assert one.returncode == 3
    two = ws.run("up", "-d", "--name", detached, "--", "sh", "-c", 'echo "detached line"; exit 4')
    assert two.returncode == 0, _text(two)
    try:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = {r["name"]: r for r in runs_json(lambda *a: subprocess.run(ws.argv(*a), cwd=elsewhere, env=ws.env, capture_output=True, text=True))}
            if states[detached]["state"] != "running":
                break
            time.sleep(0.5)
        assert (states[attached]["state"], states[attached]["exit_code"]) == ("failed", 3)
        assert (states[detached]["state"], states[detached]["exit_code"]) == ("failed", 4)
        for key, expected in ((attached, "attached line one\nhf=***\nerr\n"), (states[attached]["id"], "attached line one\nhf=***\nerr\n"),
                              (detached, "detached line\n")):
            shown = subprocess.run(ws.argv("logs", key), cwd=elsewhere, env=ws.env, capture_output=True, text=True)
            assert shown.returncode == 0, (key, shown.stdout, shown.stderr)
            # The engine copies stdout and stderr separately: their lines keep their own order, not each other's.
            lines = shown.stdout.splitlines()
            assert sorted(lines) == sorted(expected.splitlines()), (key, shown.stdout, shown.stderr)
            assert [line for line in lines if line != "err"] == [line for line in expected.splitlines() if line != "err"]
        tail = subprocess.run(ws.argv("logs", attached, "--tail", "1"), cwd=elsewhere, env=ws.env, capture_output=True, text=True)
        assert tail.stdout == shown_last(elsewhere, ws, attached)
        assert subprocess.run(ws.argv("down", detached), cwd=ws.cwd, env=ws.env, capture_output=True).returncode == 0
        kept = subprocess.run(ws.argv("logs", detached, "--tail", "1"), cwd=elsewhere, env=ws.env, capture_output=True, text=True)
        assert kept.stdout == "detached line\n", kept.stderr  # the run's log outlives the container
    finally:
        force_remove(detached)
    for path, data in _state_files(tmp_path).items():
        assert_no_leak(data, canary, path)
    assert secret not in one.stdout.decode()


@pytest.mark.engines("docker", "podman")
def test_a_detached_job_downed_before_anyone_looked_keeps_its_masked_output_and_exit_code(tmp_path, canary, engine_host, busybox_image):
    ws = _workspace(tmp_path, canary, engine_host)
    name = unique("runs-down")
    started = ws.run("up", "-d", "--name", name, "--", "sh", "-c", 'echo "detached said"; echo "hf=$HF_TOKEN"; exit 5')
    assert started.returncode == 0, _text(started)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the engine's own listing: neither `runs` nor `logs` sees the end first
            listed = json.loads(ws.run("--json", "ps").stdout)
            if any(c["name"] == name and c["status"] == "exited" for c in listed):
                break
            time.sleep(0.3)
        down = ws.run("down", name)
        assert down.returncode == 0, _text(down)
    finally:
        ws.run("down", name)
        force_remove(name)
    (run_dir,) = (tmp_path / "state" / "primus-runner" / "runs").iterdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shown = subprocess.run(ws.argv("logs", run_dir.name), cwd=elsewhere, env=ws.env, capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout == "detached said\nhf=***\n", (shown.stdout, shown.stderr)
    (rec,) = runs_json(lambda *a: subprocess.run(ws.argv(*a), cwd=elsewhere, env=ws.env, capture_output=True, text=True))
    assert (rec["id"], rec["state"], rec["exit_code"]) == (run_dir.name, "failed", 5)
    for path, data in _state_files(tmp_path).items():
        assert_no_leak(data, canary, path)


def shown_last(cwd, ws, key) -> str:
    """The last line ``logs KEY`` shows, as ``--tail 1`` must show it."""
    shown = subprocess.run(ws.argv("logs", key), cwd=cwd, env=ws.env, capture_output=True, text=True).stdout
    return shown.splitlines(keepends=True)[-1]


def test_sixteen_concurrent_launches_leave_sixteen_complete_records(tmp_path, canary, busybox_image):
    ws = _workspace(tmp_path, canary)
    procs = [ws.popen("up", "--name", unique("runs-c16"), "--", "sh", "-c", f"echo job {i}; exit {i % 3}") for i in range(16)]
    codes = [p.wait(300) for p in procs]
    for p in procs:
        p.stdout.close(), p.stderr.close()
    assert codes == [i % 3 for i in range(16)]
    records = runs_json(ws.run)
    assert len(records) == 16
    assert sorted(r["exit_code"] for r in records) == sorted(i % 3 for i in range(16))
    assert all(r["ended"] and r["state"] in ("succeeded", "failed") and Path(r["log"]).read_text().startswith("job ") for r in records)
    conn = sqlite3.connect(tmp_path / "state" / "primus-runner" / "runs.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_sigkilled_runner_s_run_is_lost_with_its_log_so_far(tmp_path, canary, busybox_image):
    ws = _workspace(tmp_path, canary)
    name = unique("runs-kill")
    proc = ws.popen("up", "--name", name, "--", "sh", "-c", "echo before the kill; sleep 60")
    try:
        deadline = time.monotonic() + 60
        logs = []
        while time.monotonic() < deadline:
            logs = list((tmp_path / "state").rglob("output.log"))
            if logs and b"before the kill" in logs[0].read_bytes():
                break
            time.sleep(0.2)
        (before,) = runs_json(ws.run)
        assert before["state"] == "running"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        (after,) = runs_json(ws.run)
        assert after["state"] == "lost" and after["exit_code"] is None and "killed" in after["note"]
        shown = ws.run("logs", after["id"])
        assert shown.stdout.decode() == "before the kill\n"
        follow = ws.run("logs", name, "-f", timeout=30)  # -f returns: nobody writes a lost run's log any more
        assert follow.returncode == 0
    finally:
        proc.kill()
        force_remove(name)


def test_an_unusable_state_directory_is_a_warning_and_the_job_runs(tmp_path, canary, busybox_image):
    ws = _workspace(tmp_path, canary)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state directory would be")
    done = ws.run("up", "--", "sh", "-c", "echo ran", env={"XDG_STATE_HOME": str(blocker)})
    assert done.returncode == 0 and done.stdout.decode() == "ran\n"
    warnings = [ln for ln in _text(done).splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "not writable" in warnings[0] and str(blocker) in warnings[0], warnings

    db = tmp_path / "state" / "primus-runner" / "runs.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"garbage, not sqlite " * 64)
    done = ws.run("up", "--", "sh", "-c", "echo ran again")
    assert done.returncode == 0 and done.stdout.decode() == "ran again\n", _text(done)
    warnings = [ln for ln in _text(done).splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "corrupt" in warnings[0] and str(db) in warnings[0], warnings
    listed = ws.run("runs")
    assert listed.returncode != 0 and "corrupt" in _text(listed) and "mv " in _text(listed)


@pytest.fixture
def tiny_state(tmp_path):
    """A 256 KiB tmpfs as the state directory (CI runs as root), unmounted after."""
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("the full-disk test mounts a tmpfs: CI runs it as root")
        pytest.skip("mounting a tmpfs needs root")
    state = tmp_path / "state"
    state.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(state)], check=True)
    try:
        yield state
    finally:
        subprocess.run(["umount", "-l", str(state)], check=False)


def test_a_full_state_disk_is_one_warning_the_job_s_code_and_runs_says_so(tmp_path, canary, busybox_image, tiny_state):
    ws = _workspace(tmp_path, canary)
    first = ws.run("up", "--", "sh", "-c", "echo room; exit 0")
    assert first.returncode == 0, _text(first)
    with open(tiny_state / "filler", "wb", buffering=0) as fh:  # the rest of the disk
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    full = ws.run("up", "--", "sh", "-c", "echo no room; exit 7")
    assert full.returncode == 7 and full.stdout.decode() == "no room\n", _text(full)
    warnings = [ln for ln in _text(full).splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and ("full" in warnings[0] or "No space left" in warnings[0]), warnings
    assert str(tiny_state) in warnings[0] and "runs show" not in _text(full)  # not recorded: no pointer to a record
    listed = ws.run("runs")
    assert listed.returncode == 0 and "full" in _text(listed) and str(tiny_state / "primus-runner") in _text(listed), _text(listed)
    db = tiny_state / "primus-runner" / "runs.db"
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = [json.loads(r[0]) for r in conn.execute("SELECT record FROM runs")]
    conn.close()
    assert [(r["state"], r["exit_code"]) for r in rows] == [("succeeded", 0)]  # complete records only: none half-written


def test_runs_gc_removes_old_finished_runs_and_their_directories(tmp_path, canary, busybox_image):
    ws = _workspace(tmp_path, canary)
    assert ws.run("up", "--", "true").returncode == 0
    (old,) = runs_json(ws.run)
    run_dir = Path(old["run_dir"])
    assert run_dir.is_dir()
    dry = ws.run("runs", "gc", "--older-than", "0s", "--dry-run")
    assert dry.returncode == 0 and old["id"] in _text(dry) and run_dir.is_dir()
    kept = ws.run("runs", "gc", "--older-than", "1d")
    assert kept.returncode == 0 and run_dir.is_dir() and len(runs_json(ws.run)) == 1
    gone = ws.run("runs", "gc", "--older-than", "0s")
    assert gone.returncode == 0 and "removed 1 run" in _text(gone)
    assert runs_json(ws.run) == [] and not run_dir.exists()
    bad = ws.run("runs", "gc", "--older-than", "soon")
    assert bad.returncode == 2 and "30d" in _text(bad)
