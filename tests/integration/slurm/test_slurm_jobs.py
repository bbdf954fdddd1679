"""``submit``/``status``/``cancel`` on the real two-node Slurm cluster (n1, n2), one container per node.

Jobs run as root through slurmd on this machine; both nodes share this host's
dockerd, so "zero containers on either node" is one label query.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine_fixtures import assert_no_leak, process_cmdlines
from runs_helpers import slurm_job_files
from runner.engines.slurm import job_cancel, controller, job_state
from runner.engines.slurm import script as slurm_script
from slurm_helpers import NOT_LISTED, job_containers, job_dir, job_id_from, runner, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

PROBE = (
    'echo "RANK=$NODE_RANK NNODES=$NNODES MASTER=$MASTER_ADDR:$MASTER_PORT GPUS=$GPUS_PER_NODE FOO=$FOO '
    'HF=$HF_TOKEN HFLEN=${#HF_TOKEN} WB=$WANDB_API_KEY DB=$DATABRICKS_TOKEN '
    'NL=${NOT_LISTED_VAR:-unset} OT=${OTHER_TOKEN:-unset}"; sleep 3'
)


def test_two_node_job_sees_its_env_and_secrets_leak_nowhere(project, docker_client, canary):
    work, env = project
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "submit", "--gpu", "none", "--wait", "--", "sh", "-c", PROBE],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        # While both containers run: command lines of every process, and docker inspect.
        def both_running():
            dirs = slurm_job_files(work, "slurm-*.out")
            if not dirs:
                return None
            job = dirs[0].name[len("slurm-"):-len(".out")]
            running = job_containers(docker_client, job, running_only=True)
            return running if len(running) == 2 else None

        running = wait_until(both_running, 180, "both containers to run")
        assert_no_leak(b"\n".join(process_cmdlines()), canary, "/proc/*/cmdline during the run")
        for item in running:
            attrs = docker_client.api.inspect_container(item["Id"])
            assert_no_leak(json.dumps([attrs["Config"].get("Env"), attrs["Args"], attrs["Config"].get("Cmd"), attrs["Config"].get("Labels")]), canary, "docker inspect")
        assert sorted(c["Labels"][slurm_script.LABEL_NODE_RANK] for c in running) == ["0", "1"]
        job = running[0]["Labels"][slurm_script.LABEL_SLURM_JOB]
        assert sorted(c["Names"][0] for c in running) == [f"/primus-{job}-0", f"/primus-{job}-1"]
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = stdout.decode() + stderr.decode()
    assert proc.returncode == 0, out
    # submit --wait shows each line with its rank ("[1] RANK=1 …"), from srun --label.
    lines = [line.split("] ", 1)[1] for line in stdout.decode().splitlines() if "] RANK=" in line]
    assert len(lines) == 2, out
    assert sorted(line.split("]")[0] for line in stdout.decode().splitlines() if "] RANK=" in line) == ["[0", "[1"]
    fields = [dict(item.split("=", 1) for item in line.split()) for line in lines]
    assert sorted(f["RANK"] for f in fields) == ["0", "1"]
    assert {f["NNODES"] for f in fields} == {"2"}
    assert {f["MASTER"] for f in fields} == {"127.0.0.1:29500"}, "every node sees the same master (n1's NodeAddr)"
    assert {f["GPUS"] for f in fields} == {"0"}
    for f in fields:
        assert f["FOO"] == "foo-value"
        # The masker turns exactly a secret's value into ***: the container had the real values.
        assert (f["HF"], f["WB"], f["DB"]) == ("***", "***", "***")
        assert f["HFLEN"] == str(len(canary["HF_TOKEN"]))
        assert f["NL"] == "unset" and f["OT"] == "unset", "a variable not on the list never reaches the job"
    assert_no_leak(out, canary, "submit's stdout/stderr")

    directory = job_dir(work)
    job_id = next(directory.glob("slurm-*.out")).name[len("slurm-"):-len(".out")]
    written = list(directory.iterdir())
    assert {p.name for p in written} >= {"plan.json", "job.sbatch", f"slurm-{job_id}.out", f"exit-{job_id}-0", f"exit-{job_id}-1"}
    for path in written:
        assert_no_leak(path.read_bytes(), canary, f"the job's file {path.name}")
        assert NOT_LISTED.encode() not in path.read_bytes()
    assert oct(directory.stat().st_mode & 0o777) == "0o700"
    script = (directory / "job.sbatch").read_text()
    assert "--export=ALL" not in script and "set -x" not in script
    for args in (["show", "job", job_id], ["show", "job", "-d", job_id], ["write", "batch_script", job_id, "-"]):
        shown = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30)
        assert shown.returncode == 0, shown.stderr
        assert_no_leak(shown.stdout, canary, f"scontrol {' '.join(args)}")
    assert job_containers(docker_client, job_id) == [], "containers are removed when the job ends"

    status = runner(work, env, "--json", "status", job_id)
    assert status.returncode == 0
    doc = json.loads(status.stdout)
    assert {k: doc[k] for k in ("job_id", "state", "exit_code", "restarts")} == {"job_id": job_id, "state": "completed", "exit_code": 0, "restarts": 0}


def test_wait_returns_the_failing_ranks_code(project, docker_client):
    work, env = project
    # Rank 1 fails with 7; rank 0 would run on, and is stopped by --kill-on-bad-exit.
    result = runner(work, env, "submit", "--gpu", "none", "--wait", "--", "sh", "-c", 'if [ "$NODE_RANK" = 1 ]; then exit 7; fi; sleep 60')
    assert result.returncode == 7, result.stdout + result.stderr
    job_id = next(job_dir(work).glob("slurm-*.out")).name[len("slurm-"):-len(".out")]
    status = runner(work, env, "--json", "status", job_id)
    assert {k: v for k, v in json.loads(status.stdout).items() if k in ("job_id", "state", "exit_code")} == {"job_id": job_id, "state": "failed", "exit_code": 7}
    assert job_containers(docker_client, job_id) == []


def test_up_engine_slurm_is_submit_wait(project, docker_client):
    """``up --engine slurm``: the launch through the registry's Slurm engine, attached as ``up`` is
    (``submit --wait``): the job's output streamed masked, the failing rank's code, no container left."""
    work, env = project
    result = runner(work, env, "up", "--engine", "slurm", "--gpu", "none", "--", "sh", "-c",
                    'echo "token=$HF_TOKEN"; if [ "$NODE_RANK" = 1 ]; then sleep 2; exit 7; fi; sleep 60')
    assert result.returncode == 7, result.stdout + result.stderr
    assert "token=" in result.stdout and env["HF_TOKEN"] not in result.stdout + result.stderr
    job_id = next(job_dir(work).glob("slurm-*.out")).name[len("slurm-"):-len(".out")]
    assert job_containers(docker_client, job_id) == []


def _submit_sleeper(work: Path, env: dict, docker_client) -> str:
    result = runner(work, env, "--json", "submit", "--gpu", "none", "--", "sleep", "300")
    assert result.returncode == 0, result.stderr
    job_id = json.loads(result.stdout)["job_id"]
    wait_until(lambda: len(job_containers(docker_client, job_id, running_only=True)) == 2, 180, "both containers to run (the shared cluster may queue it)")
    return job_id


def test_cancel_during_the_run_leaves_no_container(project, docker_client):
    work, env = project
    job_id = _submit_sleeper(work, env, docker_client)
    result = runner(work, env, "cancel", job_id)
    assert result.returncode == 0, result.stderr
    assert job_containers(docker_client, job_id) == []
    status = runner(work, env, "--json", "status", job_id)
    assert json.loads(status.stdout)["state"] == "cancelled"


def test_killing_the_step_hard_leaves_no_container(project, docker_client):
    work, env = project
    job_id = _submit_sleeper(work, env, docker_client)
    plan_file = str(job_dir(work) / "plan.json").encode()
    agents = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"node-agent" in cmdline and plan_file in cmdline and b"srun" not in cmdline.split(b"\0")[0]:
                agents.append(int(pid))
    assert len(agents) == 2, "one agent per node"
    for pid in agents:
        os.kill(pid, 9)  # no chance to clean up: the batch script's cleanup step must do it
    wait_until(lambda: (s := job_state.job_state(job_id)) is not None and s.done and s.slurm_state != "COMPLETING", 90, "the job to end")
    assert job_containers(docker_client, job_id) == []


def test_cleanup_step_on_named_nodes_removes_a_jobs_containers(slurm_cluster, docker_client, busybox_image):
    """The path ``cancel`` takes for nodes on other hosts: a cleanup job on those nodes."""
    fake_job = "999000111"
    labels = {"io.primus-runner.managed": "true", slurm_script.LABEL_SLURM_JOB: fake_job}
    for rank in (0, 1):
        docker_client.containers.run(busybox_image, ["sleep", "300"], detach=True, stop_signal="SIGKILL", labels={**labels, slurm_script.LABEL_NODE_RANK: str(rank)}, name=f"primus-{fake_job}-{rank}")
    try:
        assert job_cancel.cleanup_on_nodes(fake_job, list(slurm_cluster.nodes), wait=True, timeout=240) == 0
        assert job_containers(docker_client, fake_job) == []
    finally:
        for c in job_containers(docker_client, fake_job):
            docker_client.api.remove_container(c["Id"], force=True)


def test_status_of_an_unknown_job_is_exit_2(slurm_cluster, tmp_path):
    result = subprocess.run([sys.executable, "-m", "runner", "status", "987654321"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert result.returncode == 2 and "does not know job 987654321" in result.stderr


def test_check_engine_slurm_answers(slurm_cluster):
    assert isinstance(controller.check_engine(), list)
