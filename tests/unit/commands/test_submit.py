"""``submit [LAUNCH] [Slurm options] [--wait] [--dry-run] -- CMD…``: ``up`` on the Slurm engine; a dry
run prints the sbatch line and the batch script and writes nothing."""

from __future__ import annotations

import json

from cli_runner import files_under

CONFIG = "container:\n  gpu: none\n  options:\n    image: busybox:1\n"


def test_a_dry_submit_prints_the_batch_script_of_the_slurm_engine(cli, tmp_path):
    (tmp_path / ".primus.yaml").write_text(CONFIG)
    before = files_under(tmp_path)
    rc, out, err = cli("submit", "--dry-run", "-N", "2", "-p", "gpu", "--", "python", "train.py")
    assert rc == 0, err
    assert "sbatch --parsable" in out and "#!/bin/bash" in out
    assert "#SBATCH --nodes=2\n" in out and "#SBATCH --partition=gpu\n" in out
    assert files_under(tmp_path) == before  # the script's path is shown, nothing is written there


def test_submit_json_is_the_same_plan_as_plan_engine_slurm(cli, tmp_path):
    (tmp_path / ".primus.yaml").write_text(CONFIG)
    submitted = json.loads(cli("--json", "submit", "--dry-run", "--name", "j1", "--", "echo", "hi").stdout)
    planned = json.loads(cli("--json", "plan", "--engine", "slurm", "--name", "j1", "--", "echo", "hi").stdout)
    assert submitted["command"] == ["echo", "hi"] and submitted["image"] == "busybox:1"
    assert {k: v for k, v in submitted.items() if k != "request"} == {k: v for k, v in planned.items() if k != "request"}

