"""A SIGINT (Ctrl-C) at ``submit --wait`` on the real two-node cluster: the runner stops following,
says the job keeps running and how to stop it, and exits 130; the job and its containers run on,
and its run record stays running, until ``cancel`` stops them. Ctrl-C typed at ``logs JOB -f`` (a
real terminal) ends the follow with 0, as on a container, and the job runs on. Inside an allocation
(the launcher's ``slurm srun``: a step), SIGINT stops the step, its agents remove their containers,
and the runner says so and exits 130."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from primus_standin import RUNNER, Space, space, standin_image  # noqa: F401 - fixtures
from pty_session import PtySession
from runs_helpers import runs_json
from runner.engines.slurm import job_state
from runner.engines.slurm.script import LABEL_SLURM_JOB
from slurm_helpers import job_containers, runner, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.docker]


def _job_id(proc: subprocess.Popen) -> str:
    """The job id the runner announces on stderr (read line by line; the rest stays in the pipe)."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        found = re.search(r"submitted job (\d+)", line)
        if found:
            return found.group(1)
    pytest.fail("no job was announced: " + "".join(seen)[-2000:])


def test_ctrl_c_at_submit_wait_stops_following_and_the_job_keeps_running(project, docker_client):
    work, env = project
    proc = subprocess.Popen([sys.executable, "-P", "-m", "runner", "submit", "--gpu", "none", "--wait", "--", "sleep", "300"],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    job_id = None
    try:
        job_id = _job_id(proc)
        wait_until(lambda: len(job_containers(docker_client, job_id, running_only=True)) == 2, 180, "both containers to run")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert f"warning: stopped following job {job_id}; it keeps running (primus-runner cancel {job_id} stops it)" in err, err
        assert "Traceback" not in err and "error:" not in err, err
        state = job_state.job_state(job_id)
        assert state is not None and not state.done, "the job keeps running"
        assert len(job_containers(docker_client, job_id, running_only=True)) == 2
        (record,) = runs_json(lambda *a, **kw: runner(work, env, *a, **kw))
        assert record["state"] == "running", record
    finally:
        if proc.poll() is None:
            proc.kill()
        if job_id:
            runner(work, env, "cancel", job_id)
            assert job_containers(docker_client, job_id) == []


def test_ctrl_c_at_logs_follow_of_a_job_ends_it_with_0_and_the_job_keeps_running(project, docker_client):
    work, env = project
    submitted = runner(work, env, "--json", "submit", "--gpu", "none", "--", "sh", "-c", "echo first-line; while true; do sleep 1; echo tick; done")
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["job_id"]
    try:
        wait_until(lambda: len(job_containers(docker_client, job_id, running_only=True)) == 2, 180, "both containers to run")
        with PtySession([sys.executable, "-P", "-m", "runner", "logs", job_id, "-f"], work, env) as session:
            session.expect("first-line")
            session.sendcontrol("c")
            code = session.finish()
            shown = bytes(session.transcript)
        assert code == 0, "logs -f ends with 0 on Ctrl-C"
        assert b"Traceback" not in shown and b"error" not in shown.lower(), "nothing more is said"
        state = job_state.job_state(job_id)
        assert state is not None and not state.done, "the job keeps running"
    finally:
        runner(work, env, "cancel", job_id)
        assert job_containers(docker_client, job_id) == []


def _runner_under(salloc: subprocess.Popen) -> int:
    """The runner salloc started (its one child)."""
    def child():
        try:
            return Path(f"/proc/{salloc.pid}/task/{salloc.pid}/children").read_text().split()
        except OSError:
            return []
    (pid,) = wait_until(child, 120, "salloc to start the runner")
    return int(pid)


def test_sigint_to_a_step_in_an_allocation_stops_it_and_leaves_no_container(space: Space, slurm_cluster, docker_client):
    entry = "container:\n  entry: [sh, -c, 'echo ready; sleep 300', sh]\n"
    (space.project / "entry.yaml").write_text(space.config.read_text().replace("container:\n", entry, 1))
    salloc = subprocess.Popen(["salloc", "-N", "2", "-p", slurm_cluster.partition, "-t", "5", "-J", "primus-test-interrupt", *RUNNER,
                               "--config", str(space.project / "entry.yaml"), "slurm", "srun", "-N", "2", "--", "x"],
                              cwd=space.checkout, env=space.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "ready" in salloc.stdout.readline(), "the step's first line"
        allocation = next(m.group(1) for line in salloc.stderr if (m := re.search(r"Granted job allocation (\d+)", line)))
        wait_until(lambda: len(job_containers(docker_client, allocation, running_only=True)) == 2, 120, "both containers to run")
        os.kill(_runner_under(salloc), signal.SIGINT)
        _, err = salloc.communicate(timeout=120)
    finally:
        if salloc.poll() is None:
            salloc.kill()
    assert "warning: interrupted: the step was stopped (its agents remove their containers)" in err, err
    assert "Traceback" not in err, err
    assert re.search(r"exit 130 after", err), err
    assert docker_client.api.containers(all=True, filters={"label": f"{LABEL_SLURM_JOB}={allocation}"}) == []
