"""A plan file the node checks against the submitted digest (the job directory itself: test_job_directory.py)."""

from __future__ import annotations

import json

import pytest

from runner.engines.slurm import agent, node
from runner.engines.slurm.script import PLAN_DIGEST, PLAN_FORMAT
from runner.errors import ConfigError
from runner.ui import Output


def test_the_node_refuses_a_swapped_plan_file(tmp_path, monkeypatch):
    submitted = json.dumps({"format": PLAN_FORMAT, "plan": {"image": "primus-test/busybox:latest"}}, indent=2)
    swapped = json.dumps({"format": PLAN_FORMAT, "job_dir": str(tmp_path), "slurm": {"nodes": 1, "master_port": 1, "gpus_per_node": 0},
                          "plan": {"image": "attacker/image:latest", "command": ["true"], "env": [], "name": "x"}}, indent=2)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(swapped)  # what another user put there while the job was queued
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv(PLAN_DIGEST, node.plan_digest(submitted))
    with pytest.raises(ConfigError) as info:
        agent.run_node(str(plan_file), Output())
    assert "not the one this job was submitted with" in str(info.value)
