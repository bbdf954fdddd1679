"""Faults of a Slurm job on the real two-node cluster (n1, n2), each leaving nothing behind:
a node agent killed mid-job, the time limit, and a requeue (preemption).

"Nothing behind" is checked on every node: both nodes share this host's dockerd, so no
container with the job's label, and Slurm lists no step of the job.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from runs_helpers import slurm_job_dirs, slurm_job_files
from slurm_helpers import job_containers, job_dir, runner, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.docker]


def _agent_pid(plan_file: Path, rank: int) -> int | None:
    """The node agent of ``rank`` for this job (the python process srun started, not srun itself)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"node-agent" not in cmdline or str(plan_file).encode() not in cmdline or b"srun" in cmdline.split(b"\0")[0]:
                continue
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"SLURM_NODEID={rank}".encode() in environ:
            return int(pid)
    return None


def _steps(job_id: str) -> list[str]:
    listed = subprocess.run(["squeue", "-h", "-s", "-j", job_id, "-o", "%i"], capture_output=True, text=True, timeout=30)
    return listed.stdout.split()


def _nothing_left(docker_client, job_id: str) -> None:
    from runner.engines.slurm import job_state

    wait_until(lambda: (s := job_state.job_state(job_id)) is not None and s.done and s.slurm_state != "COMPLETING", 60, "Slurm to finish the job")
    assert job_containers(docker_client, job_id) == [], "no container of the job on any node"
    assert _steps(job_id) == [], "no job step left"


def _running_job(work: Path, docker_client) -> str:
    def both():
        outs = slurm_job_files(work, "slurm-*.out")
        if not outs:
            return None
        job = outs[0].name[len("slurm-"):-len(".out")]
        return job if len(job_containers(docker_client, job, running_only=True)) == 2 else None

    return wait_until(both, 180, "both containers to run")


def test_a_killed_node_agent_fails_the_job_naming_its_node(project, docker_client):
    work, env = project
    proc = subprocess.Popen([sys.executable, "-m", "runner", "submit", "--gpu", "none", "--wait", "--", "sleep", "300"],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        job_id = _running_job(work, docker_client)
        pid = wait_until(lambda: _agent_pid(job_dir(work) / "plan.json", 1), 30, "rank 1's agent")
        os.kill(pid, signal.SIGKILL)  # no chance to stop its container or write its code
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode not in (0, None), stderr
    assert "the node agent on n2 (rank 1) ended without an exit code" in stderr, stderr
    state = json.loads(runner(work, env, "--json", "status", job_id).stdout)
    assert state["state"] == "failed", state
    # The other node's agent was stopped by srun (--kill-on-bad-exit) and stopped its container.
    assert (job_dir(work) / f"exit-{job_id}-0").read_text().strip() in ("130", "143")
    assert not (job_dir(work) / f"exit-{job_id}-1").exists()
    logs = runner(work, env, "logs", job_id)
    assert "node n2 (rank 1): its node agent ended without an exit code" in logs.stdout, logs.stdout
    _nothing_left(docker_client, job_id)


def test_time_limit_is_timeout_with_its_documented_code(project, docker_client):
    work, env = project
    done = runner(work, env, "submit", "--gpu", "none", "--time", "1", "--wait", "--", "sleep", "300", timeout=400)
    out = done.stdout + done.stderr
    assert slurm_job_dirs(work), out
    job_id = next(job_dir(work).glob("slurm-*.out")).name[len("slurm-"):-len(".out")]
    assert done.returncode == 143, out  # docs/slurm.md: a job stopped at its time limit ends as SIGTERM does
    assert f"job {job_id}: TIMEOUT" in done.stderr, out
    status = runner(work, env, "--json", "status", job_id)
    state = json.loads(status.stdout)
    assert (state["state"], state["exit_code"]) == ("timeout", 143), state
    text = runner(work, env, "status", job_id)
    assert "TIMEOUT" in text.stdout
    # The agents had KillWait (10 s) to stop their containers; by the time Slurm says the job has ended, none is left.
    _nothing_left(docker_client, job_id)


def _squeue_state(job_id: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=30).stdout.strip()


@pytest.mark.parametrize("store", ["server", "file"])
def test_requeue_runs_again_with_the_same_tracker_run(project, docker_client, request, store):
    """The tracker handshake's run ids are in the job's saved environment: a requeued run logs to the same
    MLflow run and resumes the same W&B run (WANDB_RESUME=allow, added by the agent). A ``file:`` store
    gets the same handshake: the runner creates the run in the directory (mounted into both ranks)."""
    import urllib.request

    work, env = project
    volume: list[str] = []
    if store == "server":
        tracking = str(request.getfixturevalue("mlflow_server"))
    else:
        root = work / "mlruns"
        root.mkdir()
        tracking, volume = root.as_uri(), ["--volume", f"{root}:{root}"]
    (work / ".primus.yaml").write_text((work / ".primus.yaml").read_text() + (
        "trackers:\n  framework: generic\n  disable_mlflow: false\n"
        f"  mlflow_experiment_name: requeue-{uuid.uuid4().hex[:8]}\n  disable_wandb: false\n"))
    env = {**env, "MLFLOW_TRACKING_URI": tracking}
    # found: the run's directory is there, in the store the job writes to (a file store only)
    job = ('found=no; test -f "${MLFLOW_TRACKING_URI#file://}/$MLFLOW_EXPERIMENT_ID/$MLFLOW_RUN_ID/meta.yaml" && found=yes; '
           'echo "run=${MLFLOW_RUN_ID:-none} wandb=${WANDB_RUN_ID:-none} resume=${WANDB_RESUME:-none} found=$found"; sleep 300')
    sub = runner(work, env, "--json", "submit", "--gpu", "none", "--requeue", "--env", "WANDB_MODE=offline", *volume, "--", "sh", "-c", job)
    assert sub.returncode == 0, sub.stderr
    job_id = json.loads(sub.stdout)["job_id"]
    try:
        first = wait_until(lambda: (c := job_containers(docker_client, job_id, running_only=True)) and len(c) == 2 and c, 180, "the first run")
        first_ids = {c["Id"] for c in first}
        requeued = subprocess.run(["scontrol", "requeue", job_id], capture_output=True, text=True, timeout=30)
        assert requeued.returncode == 0, requeued.stderr
        # Slurm holds a requeued job back for 120 s (reason BeginTime) before it may run again: its
        # own policy, not the runner's. Once the job is pending again, it may start now.
        wait_until(lambda: _squeue_state(job_id) == "PENDING", 120, "the requeued job pending again")
        released = subprocess.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], capture_output=True, text=True, timeout=30)
        assert released.returncode == 0, released.stderr
        # The first run's containers go; the second run's come (new containers, same names).
        second = wait_until(lambda: (c := job_containers(docker_client, job_id, running_only=True)) and len(c) == 2
                            and not first_ids & {x["Id"] for x in c} and c, 300, "the second run")
        assert not first_ids & {c["Id"] for c in job_containers(docker_client, job_id)}, "the first run's containers are removed"
        assert sorted(c["Names"][0] for c in second) == [f"/primus-{job_id}-0", f"/primus-{job_id}-1"]
        state = json.loads(runner(work, env, "--json", "status", job_id).stdout)
        assert state["restarts"] == 1 and state["state"] == "running", state
        assert "restarted 1 time(s)" in runner(work, env, "status", job_id).stdout
        wait_until(lambda: len([l for l in runner(work, env, "logs", job_id).stdout.splitlines() if "run=" in l]) == 4, 60, "both runs' lines")
        lines = [line.split("] ", 1)[1] for line in runner(work, env, "logs", job_id).stdout.splitlines() if "run=" in line]
        assert len(set(lines)) == 1, f"both runs, both nodes: the same tracker runs: {lines}"
        fields = dict(item.split("=", 1) for item in lines[0].split())
        assert len(fields["run"]) == 32 and len(fields["wandb"]) == 8 and fields["resume"] == "allow", fields
        if store == "server":
            with urllib.request.urlopen(f"{tracking}/api/2.0/mlflow/runs/get?run_id={fields['run']}", timeout=10) as answer:
                assert json.load(answer)["run"]["info"]["run_id"] == fields["run"], "the run the handshake created"
        else:  # the one run in the store is the one every rank of both runs was given, and it found it
            assert [p.parent.name for p in root.glob("*/*/meta.yaml")] == [fields["run"]] and fields["found"] == "yes", lines
    finally:
        runner(work, env, "cancel", job_id)
    _nothing_left(docker_client, job_id)
