"""Each node's computed values (``runner.engines.slurm.computed``): GPUS_PER_NODE from the flag, else the
allocation, else slurm.gpus_per_node, never 0 when one of them says otherwise."""

from __future__ import annotations

import pytest

from runner.engines.slurm import computed

SLURM_ENV = {"SLURM_NNODES": "2", "PRIMUS_MASTER_NODEADDR": "10.0.0.7"}


@pytest.mark.parametrize("asked,environ,expected", [
    (8, {"SLURM_GPUS_ON_NODE": "2"}, 8),  # the flag beats the allocation
    (None, {"SLURM_GPUS_ON_NODE": "2"}, 2),
    (None, {"SLURM_STEP_GPUS": "0,1,2"}, 3),
    (None, {"SLURM_JOB_GPUS": "4,5"}, 2),
    (None, {}, 4),  # no allocation: slurm.gpus_per_node
    (0, {"SLURM_GPUS_ON_NODE": "2"}, 0),  # a container without GPUs
])
def test_gpus_per_node_in_order(asked, environ, expected):
    rule = computed.rule(2, 1234, asked, 4)
    assert computed.values(rule, {**SLURM_ENV, **environ}, "1")["GPUS_PER_NODE"] == str(expected)


def test_a_nodes_values():
    assert computed.values(computed.rule(2, 29500, None, 8), SLURM_ENV, "1") == {
        "NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "10.0.0.7", "MASTER_PORT": "29500", "GPUS_PER_NODE": "8"}


def test_the_dry_run_states_each_rule():
    shown = computed.shown(computed.rule(3, 1234, None, 8))
    assert shown["NNODES"] == "3" and shown["NODE_RANK"] == "0 … 2 (the node's rank)" and shown["MASTER_PORT"] == "1234"
    assert shown["GPUS_PER_NODE"] == "the GPUs Slurm allocates on the node (SLURM_GPUS_ON_NODE), else 8 (slurm.gpus_per_node)"
    assert computed.shown(computed.rule(1, 1234, 2, 8))["GPUS_PER_NODE"] == "2"
    assert set(shown) == set(computed.NAMES)
