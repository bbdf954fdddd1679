"""Slurm's ``direct`` entry as the launcher spells it (``slurm srun -N 2 … -- direct -- …``) on the real
two-node cluster (gres gpu:4 per node): what each node's direct launcher is given as GPUS_PER_NODE."""

from __future__ import annotations

import pytest

from primus_standin import Space, seen, space, standin_image  # noqa: F401 - fixtures

pytestmark = [pytest.mark.slurm, pytest.mark.docker]


def gpus_per_node(space: Space, *flags: str) -> dict[str, str]:
    result = space.run("--config", str(space.config), "slurm", "srun", "-N", "2", *flags, "--", "direct", "--", "node_smoke",
                       cwd=space.checkout)
    assert result.returncode == 0, result.stdout + result.stderr
    ranks = seen(result.stdout)
    assert set(ranks) == {"0", "1"}, result.stdout + result.stderr
    return {rank: got["env"].get("GPUS_PER_NODE") for rank, got in ranks.items()}


@pytest.mark.parametrize("flags,expected", [
    (("--gpus-per-node=2",), "2"),  # the flag, as given (Slurm allocates 2)
    (("--gres=gpu:3",), "3"),  # no flag: what Slurm allocated on the node (SLURM_GPUS_ON_NODE)
    ((), "8"),  # neither: slurm.gpus_per_node (the built-in 8)
], ids=["flag", "allocation", "config"])
def test_the_direct_launcher_on_each_node_gets_gpus_per_node(space: Space, slurm_cluster, flags, expected):
    assert gpus_per_node(space, *flags) == {"0": expected, "1": expected}


def test_the_dry_run_shows_each_nodes_computed_values(space: Space, slurm_cluster):
    result = space.run("--config", str(space.config), "--dry-run", "slurm", "srun", "-N", "2", "--gpus-per-node=2", "--",
                       "direct", "--env", "LIT=7", "--", "node_smoke", cwd=space.checkout)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    names = next(line for line in lines if line.startswith("# each node's environment: "))
    assert "LIT" in names and "HF_TOKEN" in names
    assert {"#   NNODES=2", "#   NODE_RANK=0 … 1 (the node's rank)", "#   GPUS_PER_NODE=2"} <= set(lines)
    assert any(line.startswith("#   MASTER_ADDR=") for line in lines) and any(line.startswith("#   MASTER_PORT=") for line in lines)
