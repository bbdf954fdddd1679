"""Inside a Slurm allocation (``salloc``: SLURM_JOB_ID set), on the real two-node cluster: the launcher's
``slurm srun -N 2 -- direct -- …`` runs a step in it, as the launcher's srun does; ``submit`` says that
it submits a new job."""

from __future__ import annotations

import re
import subprocess

import pytest

from primus_standin import RUNNER, Space, seen, space, standin_image  # noqa: F401 - fixtures

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

NEW_JOB = "this submits a new job"


def in_allocation(space: Space, cluster, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    """``salloc -N 2 primus-runner ARGS``: the result and the allocation's job id."""
    result = subprocess.run(["salloc", "-N", "2", "-p", cluster.partition, "-t", "5", "-J", "primus-test-alloc", *RUNNER, *args],
                            cwd=space.checkout, env=space.env, capture_output=True, text=True, timeout=300)
    granted = re.search(r"Granted job allocation (\d+)", result.stderr)
    assert granted, result.stderr
    return result, granted.group(1)


def test_slurm_srun_inside_an_allocation_runs_a_step_in_it(space: Space, slurm_cluster):
    result, allocation = in_allocation(space, slurm_cluster, "--config", str(space.config), "slurm", "srun", "-N", "2", "--",
                                       "direct", "--env", "LIT=7", "--", "node_smoke")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    ranks = seen(result.stdout)
    assert set(ranks) == {"0", "1"}, out
    assert {got["env"]["NODE_RANK"] for got in ranks.values()} == {"0", "1"} and {got["env"]["LIT"] for got in ranks.values()} == {"7"}
    # Each node's agent wrote its exit code under the job id it ran in: the allocation's, not a new job's.
    exits = sorted(p.name for p in space.home.rglob("exit-*-*"))
    assert exits == [f"exit-{allocation}-0", f"exit-{allocation}-1"], exits
    assert f"running a step in allocation {allocation}" in out and NEW_JOB not in out


def test_submit_inside_an_allocation_says_it_submits_a_new_job(space: Space, slurm_cluster):
    dry, allocation = in_allocation(space, slurm_cluster, "--config", str(space.config), "submit", "--dry-run", "--", "true")
    assert dry.returncode == 0, dry.stderr
    assert dry.stderr.count(NEW_JOB) == 1 and f"inside Slurm allocation {allocation}" in dry.stderr, dry.stderr
    assert dry.stdout.splitlines()[0].startswith("# sbatch")
    result, allocation = in_allocation(space, slurm_cluster, "--config", str(space.config), "submit", "--wait", "--", "true")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.count(NEW_JOB) == 1 and f"inside Slurm allocation {allocation}" in result.stderr, result.stderr
    job = re.search(r"submitted job (\d+)", result.stdout + result.stderr)
    assert job and job.group(1) != allocation
