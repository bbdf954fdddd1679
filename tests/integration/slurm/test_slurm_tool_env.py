"""The job's variables never configure a Slurm tool: a cloned repository's ``.primus.yaml`` that
forwards ``SLURM_CONF=./slurm.conf`` (its own controller) reaches the job, and nothing else.

sbatch, srun and scontrol are wrapped on PATH by scripts that record the environment each was
started with; the repository's ``slurm.conf`` names a loopback controller that records every
byte it is sent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine_fixtures import slurm_project_yaml
from loopback_servers import ByteRecorder

CARRIED_PREFIX = "PRIMUS_RUNNER_ENV_"  # the job variables' names in the job's environment

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

TOOLS = ("sbatch", "srun", "scontrol")


def wrap_tools(directory: Path, records: Path) -> None:
    """``sbatch``/``srun``/``scontrol`` on PATH that write their environment (NUL-separated) and exec the real one."""
    directory.mkdir()
    for name in TOOLS:
        real = subprocess.run(["which", name], capture_output=True, text=True, check=True).stdout.strip()
        path = directory / name
        path.write_text(f'#!/bin/sh\nenv -0 > "{records}/{name}.$$"\nexec {real} "$@"\n')
        path.chmod(0o755)


def recorded(records: Path) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {name: [] for name in TOOLS}
    for path in records.iterdir():
        entries = [e.split("=", 1) for e in path.read_bytes().decode().split("\0") if "=" in e]
        found[path.name.split(".")[0]].append(dict(entries))
    return found


def test_a_forwarded_slurm_conf_reaches_the_job_and_configures_no_slurm_tool(tmp_path_factory, slurm_cluster, busybox_image, canary):
    attacker = ByteRecorder()  # the attacker's slurmctld
    work = tmp_path_factory.mktemp("slurm-tool-env")
    records = work / "records"
    records.mkdir()
    wrap_tools(work / "bin", records)
    conf = Path("/etc/slurm/slurm.conf").read_text().splitlines()
    evil = [line for line in conf if not line.startswith(("SlurmctldHost", "SlurmctldPort"))]
    (work / "slurm.conf").write_text("\n".join([*evil, "SlurmctldHost=evil(127.0.0.1)", f"SlurmctldPort={attacker.port}", ""]))
    forwarded = ["HF_TOKEN", "SLURM_CONF=./slurm.conf", "SRUN_CPUS_PER_TASK=1"]  # as a cloned repository's file asks
    (work / ".primus.yaml").write_text(slurm_project_yaml(busybox_image, slurm_cluster.partition, forwarded))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))}
    env.update(HOME=str(work), HF_TOKEN=canary["HF_TOKEN"], PATH=f"{work / 'bin'}{os.pathsep}{env['PATH']}")
    try:
        result = subprocess.run([sys.executable, "-P", "-m", "runner", "submit", "--wait", "--", "sh", "-c",
                                 'echo "conf=$SLURM_CONF srun=$SRUN_CPUS_PER_TASK len=${#HF_TOKEN}"'],
                                cwd=work, env=env, capture_output=True, text=True, timeout=300)
    finally:
        attacker.close()
    out = result.stdout + result.stderr
    # The attacker's controller was never asked: no connection, so no byte of the secret.
    assert not [data for data in attacker.received if canary["HF_TOKEN"].encode() in data], "the secret reached the attacker"
    assert attacker.received == []
    assert result.returncode == 0, out
    # The job was given what the file asked for, by the real controller.
    lines = sorted(line.split("] ", 1)[1] for line in result.stdout.splitlines() if "] conf=" in line)
    assert lines == [f"conf=./slurm.conf srun=1 len={len(canary['HF_TOKEN'])}"] * 2, out
    seen = recorded(records)
    assert seen["sbatch"] and seen["srun"] and seen["scontrol"], seen.keys()
    shell = {"PWD", "SHLVL", "_", "OLDPWD"}  # what sh itself sets in the wrapper
    submitting = [e for envs in seen.values() for e in envs if "SLURM_JOB_ID" not in e]
    in_job = [e for envs in seen.values() for e in envs if "SLURM_JOB_ID" in e]
    assert len(submitting) >= 2 and len(in_job) >= 3, "sbatch and scontrol here; srun and scontrol in the batch script"
    for environ in submitting:  # the user's own environment, nothing added
        assert {k: v for k, v in environ.items() if k not in shell} == {k: v for k, v in env.items() if k not in shell}
    for environ in in_job:  # in the batch script: the job's values only under the runner's own names
        assert environ.get("SLURM_CONF") == "/etc/slurm/slurm.conf" and "SRUN_CPUS_PER_TASK" not in environ
        assert "HF_TOKEN" not in environ and environ[f"{CARRIED_PREFIX}SLURM_CONF"] == "./slurm.conf"
