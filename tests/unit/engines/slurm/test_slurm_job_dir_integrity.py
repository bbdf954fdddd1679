"""A job directory no other user controls, and a plan file the node checks against the submitted digest."""

from __future__ import annotations

import json
import os

import pytest

from runner.engines.slurm import agent, job_directory, node
from runner.engines.slurm.script import PLAN_DIGEST, PLAN_FORMAT
from runner.errors import ConfigError
from runner.ui import Output


def test_a_parent_owned_by_another_user_is_refused(tmp_path):
    parent = tmp_path / "shared-runs"
    parent.mkdir(mode=0o755)
    os.chown(parent, 65534, 65534)  # nobody's (the tests run as root, which may hand it over)
    with pytest.raises(ConfigError) as info:
        job_directory.make_job_dir(parent / "job-1")
    assert "another user" in str(info.value)
    assert not (parent / "job-1").exists()


def test_a_parent_others_may_write_to_is_refused_unless_sticky(tmp_path):
    parent = tmp_path / "open-runs"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(ConfigError):
        job_directory.make_job_dir(parent / "job-1")
    parent.chmod(0o1777)  # like /tmp: others cannot rename what is yours
    made = job_directory.make_job_dir(parent / "job-2")
    assert made.stat().st_mode & 0o777 == 0o700


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
