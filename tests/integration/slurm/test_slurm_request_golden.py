"""The request is the whole truth: the batch script and the plan file ``sbatch`` is given on the real
two-node cluster are, byte for byte, the ones ``submit --dry-run --json`` shows, apart from the run id
(which the dry run names under ``ids``). sbatch is wrapped on PATH by a script that copies what it is
given (the batch script it names, the plan file beside it, the names on its stdin) and runs the real one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from engine_fixtures import assert_no_leak, slurm_project_yaml

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

WRAPPER = """#!{python}
import os, pathlib, shutil, subprocess, sys
record = pathlib.Path({record!r})
script = pathlib.Path(sys.argv[-1])
shutil.copy(script, record / "job.sbatch")
shutil.copy(script.with_name("plan.json"), record / "plan.json")
(record / "argv.json").write_text(__import__("json").dumps(sys.argv[1:]))
given = sys.stdin.buffer.read()
(record / "stdin-names").write_text("\\n".join(e.split(b"=", 1)[0].decode() for e in given.split(b"\\0") if e))
sys.exit(subprocess.run([{real!r}, *sys.argv[1:]], input=given).returncode)
"""


def test_sbatch_is_given_exactly_what_the_dry_run_shows(tmp_path_factory, slurm_cluster, busybox_image, canary):
    work = tmp_path_factory.mktemp("slurm-golden")
    record, bin_dir = work / "record", work / "bin"
    record.mkdir()
    bin_dir.mkdir()
    wrapper = bin_dir / "sbatch"
    wrapper.write_text(WRAPPER.format(python=sys.executable, record=str(record), real=shutil.which("sbatch")))
    wrapper.chmod(0o755)
    (work / ".primus.yaml").write_text(slurm_project_yaml(busybox_image, slurm_cluster.partition, ["HF_TOKEN", "LIT=one"]))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MLFLOW_", "WANDB_"))}
    env.update(HOME=str(work), HF_TOKEN=canary["HF_TOKEN"], PATH=f"{bin_dir}{os.pathsep}{env['PATH']}")
    name = f"golden-{uuid.uuid4().hex[:8]}"
    argv = [sys.executable, "-P", "-m", "runner", "--json", "submit", "--name", name]
    job = ["--", "sh", "-c", 'echo "rank=$NODE_RANK lit=$LIT"']

    dry = subprocess.run([*argv, "--dry-run", *job], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    shown = json.loads(dry.stdout)["request"]
    assert not (record / "job.sbatch").exists(), "a dry run runs no sbatch"
    real = subprocess.run([*argv, "--wait", *job], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert real.returncode == 0, real.stdout + real.stderr

    given_argv = json.loads((record / "argv.json").read_text())
    real_run_id = Path(given_argv[-1]).parent.parent.name  # the job directory: <state>/runs/<run id>/slurm

    def same(text: str, run_id: str) -> str:
        assert run_id in text
        return text.replace(run_id, "<run_id>")

    dry_run_id = shown["ids"]["run_id"]
    assert same((record / "job.sbatch").read_text(), real_run_id) == same(shown["script"], dry_run_id)
    assert same((record / "plan.json").read_text(), real_run_id) == same(shown["plan_file"], dry_run_id)
    assert [a.replace(real_run_id, "<run_id>") for a in given_argv] == [a.replace(dry_run_id, "<run_id>") for a in shown["sbatch"][1:]]
    # Its stdin holds the names the job's step exports (their values), the plan's digest among them.
    exported = set(shown["export"]) - {"PRIMUS_MASTER_NODEADDR"}
    assert set((record / "stdin-names").read_text().split()) == exported
    for path in record.iterdir():
        if path.name != "stdin-names":
            assert_no_leak(path.read_bytes(), canary, path.name)
