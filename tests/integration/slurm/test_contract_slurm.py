"""docs/cli-contract.md claims that need the real two-node Slurm cluster: `submit --json` prints
`{"job_id": str}`, `status --json` has `job_id`/`state`/`exit_code`, and every LAUNCH option given to
`submit` reaches the container on every node (with the computed NNODES/NODE_RANK/MASTER_* variables)."""

from __future__ import annotations

import json
import os
import time

import pytest

from engine_fixtures import assert_no_leak
from runs_helpers import slurm_job_files
from slurm_helpers import runner

pytestmark = [pytest.mark.slurm, pytest.mark.docker]




def test_submit_json_status_json_and_launch_options_on_every_node(tmp_path_factory, slurm_cluster, busybox_image, canary):
    work = tmp_path_factory.mktemp("contract-slurm")
    shared = work / "shared"
    shared.mkdir()
    (shared / "f").write_text("volume ok\n")
    (work / ".primus.yaml").write_text(
        f"container:\n  gpu: none\n  options:\n    image: {busybox_image}\n    group-add: []\n    env: [HF_TOKEN]\n"
        f"slurm:\n  partition: {slurm_cluster.partition}\n  time: \"5\"\n")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "NO_COLOR")}
    env.update(HOME=str(work), FROM_HOST="host value", HF_TOKEN=canary["HF_TOKEN"])
    job = ('echo "R=$NODE_RANK N=$NNODES M=$MASTER_ADDR:$MASTER_PORT G=$GPUS_PER_NODE pwd=$(pwd) uid=$(id -u) '
           'lit=$LIT_A host=$FROM_HOST hflen=${#HF_TOKEN} $(cat /a/f)"')
    result = runner(work, env, "--json", "submit", "--nodes", "2", "--name", "contract-slurm", "--env", "FROM_HOST", "--env", "LIT_A=1",
                    "--volume", f"{shared}:/a:ro", "--workdir", "/w", "--user", "1000", "--shm-size", "64m", "--memory", "256m",
                    "--cpus", "1", "--network", "host", "--ipc", "host", "--device", "/dev/null", "--", "sh", "-c", job)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # exactly one document; notices went to stderr
    assert set(data) == {"job_id"} and isinstance(data["job_id"], str) and data["job_id"].isdigit()
    job_id = data["job_id"]

    deadline, status = time.monotonic() + 180, None
    while time.monotonic() < deadline:
        status = runner(work, env, "--json", "status", job_id)
        assert status.returncode == 0, status.stderr
        state = json.loads(status.stdout)
        if state["exit_code"] is not None:
            break
        time.sleep(0.5)
    assert {k: state[k] for k in ("job_id", "state", "exit_code")} == {"job_id": job_id, "state": "completed", "exit_code": 0}

    (out_file,) = slurm_job_files(work, f"slurm-{job_id}.out")
    # srun --label: "RANK: text"
    lines = sorted(line.split(": ", 1)[1] for line in out_file.read_text().splitlines() if ": R=" in line)
    expected = f"N=2 M={lines[0].split('M=')[1].split()[0]} G=0 pwd=/w uid=1000 lit=1 host=host value hflen={len(canary['HF_TOKEN'])} volume ok"
    assert lines == [f"R=0 {expected}", f"R=1 {expected}"], lines  # same MASTER_ADDR:PORT, distinct ranks
    assert_no_leak((result.stdout + result.stderr + status.stdout + status.stderr).encode() + out_file.read_bytes(), canary, "submit/status")
