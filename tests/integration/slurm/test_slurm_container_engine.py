"""A Slurm job runs its per-node containers on the engine ``container.engine`` names, not on the
one the node agent would find first: on these nodes Docker and rootful Podman both answer, and
auto-detection takes Docker. The container itself says where it runs: Podman puts
``/run/.containerenv`` in every container, Docker ``/.dockerenv``.

Engines: ``bash .ci/setup-engines.sh`` (the two-node cluster n1, n2 on this host, Docker, rootful
Podman with the test images).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine_fixtures import BUSYBOX_IMAGE, docker_or_missing, podman_or_missing

pytestmark = [pytest.mark.slurm, pytest.mark.docker, pytest.mark.podman]

PROBE = "test -f /run/.containerenv && echo engine-is-podman; test -f /.dockerenv && echo engine-is-docker; true"


def _config(engine: str, partition: str) -> str:
    return f"""\
container:
  engine: {engine}
  pull: never
  options:
    image: {BUSYBOX_IMAGE}
    group-add: []
    privileged: false
    ulimit: []  # this sandbox's Podman cannot set rlimits
slurm:
  partition: {partition}
  nodes: 2
  time: "5"
"""


def _submit(tmp_path, engine: str, partition: str) -> subprocess.CompletedProcess:
    work = tmp_path / engine
    work.mkdir()
    (work / ".primus.yaml").write_text(_config(engine, partition))
    env = {k: v for k, v in os.environ.items() if k not in ("DOCKER_HOST", "CONTAINER_HOST")}
    env["HOME"] = str(work)
    return subprocess.run([sys.executable, "-m", "runner", "submit", "--gpu", "none", "--wait", "--", "sh", "-c", PROBE],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300)


def test_a_job_with_engine_podman_runs_on_podman_on_nodes_that_also_run_docker(tmp_path, slurm_cluster):
    podman_or_missing()
    docker_or_missing()  # the point: Docker answers on the nodes too, and auto-detection picks it
    result = _submit(tmp_path, "podman", slurm_cluster.partition)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("engine-is-podman") == 2, result.stdout  # both ranks; before: Docker on each node
    assert "engine-is-docker" not in result.stdout


def test_a_job_with_engine_docker_still_runs_on_docker(tmp_path, slurm_cluster):
    docker_or_missing()
    result = _submit(tmp_path, "docker", slurm_cluster.partition)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("engine-is-docker") == 2, result.stdout
    assert "engine-is-podman" not in result.stdout


def test_the_cleanup_step_removes_the_job_containers_on_the_planned_engine(tmp_path):
    """``node-agent --cleanup JOB PLAN`` (the batch script's step after a hard kill, and ``cancel``'s
    on other nodes) removes the job's containers from the engine the plan names."""
    import json

    from engine_fixtures import PODMAN_SOCKET, unix_http
    from runner.engines.slurm.script import LABEL_SLURM_JOB
    from runner.plan import LABEL, LABEL_OWNER

    podman_or_missing()
    docker_or_missing()
    job = str(900000 + os.getpid() % 99999)
    name = f"verbs-cleanup-{job}"
    labels = [f"--label={k}={v}" for k, v in {LABEL: "true", LABEL_SLURM_JOB: job, LABEL_OWNER: str(os.getuid())}.items()]
    made = subprocess.run(["podman", "--url", f"unix://{PODMAN_SOCKET}", "create", "--name", name, *labels, BUSYBOX_IMAGE, "sleep", "300"],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    try:
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps({"plan": {"container_engine": "podman"}}))
        env = {k: v for k, v in os.environ.items() if k not in ("DOCKER_HOST", "CONTAINER_HOST")}
        done = subprocess.run([sys.executable, "-m", "runner", "node-agent", "--cleanup", job, str(plan_file)],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert unix_http(PODMAN_SOCKET, f"/v1.41/containers/{name}/json")[0] == 404, "left on Podman"  # before: Docker was asked
        assert "removed 1 container(s)" in done.stderr
    finally:
        unix_http(PODMAN_SOCKET, f"/v1.41/containers/{name}?force=true", method="DELETE")


def test_ps_engine_slurm_lists_the_runner_job_in_the_queue(tmp_path, slurm_cluster):
    """``ps --engine slurm``: the runner's jobs as squeue knows them (the caller's own)."""
    import json

    docker_or_missing()
    work = tmp_path / "ps"
    work.mkdir()
    (work / ".primus.yaml").write_text(_config("docker", slurm_cluster.partition).replace("nodes: 2", "nodes: 1"))
    env = {k: v for k, v in os.environ.items() if k not in ("DOCKER_HOST", "CONTAINER_HOST")}
    env["HOME"] = str(work)
    run = lambda *argv: subprocess.run([sys.executable, "-m", "runner", *argv], cwd=work, env=env,  # noqa: E731
                                       capture_output=True, text=True, timeout=120)
    name = f"verbs-ps-{os.getpid()}"
    submitted = run("submit", "--gpu", "none", "--name", name, "--", "sleep", "120")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    try:
        listed = run("--json", "ps", "--engine", "slurm")
        assert listed.returncode == 0, listed.stderr  # before: --engine was no option of ps (exit 2)
        rows = {row["job_id"]: row for row in json.loads(listed.stdout)}
        assert job in rows and rows[job]["name"] == name and rows[job]["state"] in ("pending", "running")
    finally:
        run("cancel", job)
