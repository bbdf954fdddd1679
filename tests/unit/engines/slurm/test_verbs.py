"""The Slurm engine's verbs: ``ps`` lists the runner's jobs Slurm still knows, a job id is this engine's."""

from __future__ import annotations

import json
import os

import pytest

from fake_slurm import prints, tools
from runner.engines.slurm import verbs
from runner.errors import EngineUnavailable, UsageError
from runner.options import Selection
from runner.ui import Output

QUEUE = ("12|primus-train|RUNNING|1:02|2|n[1-2]|/home/u/runs/r1/slurm/job.sbatch|1000\n"
         "13|someone-else|PENDING|0:00|1|(Priority)|/home/u/other.sh|1000\n"
         "14|primus-eval|PENDING|0:00|1|(Resources)|/shared/r2-eval/job.sbatch|1001\n")


@pytest.fixture
def squeue(tmp_path, monkeypatch):
    """A squeue answering QUEUE; its arguments are kept in ``args``."""
    args = tmp_path / "args"
    tools(tmp_path / "bin", monkeypatch, squeue=f'echo "$@" > {args}\n' + prints(QUEUE))
    return args


def test_only_jobs_running_a_runner_batch_script_are_listed(squeue):
    rows = verbs.queued()
    assert [(r["job_id"], r["state"], r["slurm_state"]) for r in rows] == [("12", "running", "RUNNING"), ("14", "pending", "PENDING")]
    assert squeue.read_text().split() == ["-h", "-o", "%i|%j|%T|%M|%D|%R|%o|%U", "-u", str(os.getuid())]
    verbs.queued(all_users=True)
    assert "-u" not in squeue.read_text().split()


def test_ps_prints_an_aligned_table_and_uids_for_all_users(squeue, capsys):
    assert verbs.ps(Selection(), Output(color=False)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["JOBID  NAME          STATE    TIME  NODES  NODELIST(REASON)",
                     "12     primus-train  RUNNING  1:02  2      n[1-2]",
                     "14     primus-eval   PENDING  0:00  1      (Resources)"]
    verbs.ps(Selection(all_users=True), Output(color=False))
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("NODELIST(REASON)  UID") and out[2].endswith("(Resources)       1001")


def test_ps_json_lists_each_job_without_its_script(squeue, capsys):
    verbs.ps(Selection(), Output(json_mode=True, color=False))
    doc = json.loads(capsys.readouterr().out)
    assert doc[0] == {"job_id": "12", "name": "primus-train", "state": "running", "slurm_state": "RUNNING",
                      "elapsed": "1:02", "nodes": "2", "where": "n[1-2]", "uid": "1000"}
    assert len(doc) == 2 and all("script" not in row for row in doc)


def test_an_empty_queue_says_so(tmp_path, monkeypatch, capsys):
    tools(tmp_path / "bin", monkeypatch, squeue=prints(""))
    assert verbs.ps(Selection(), Output(color=False)) == 0
    assert "no primus-runner Slurm jobs in the queue of yours (--all-users lists every user's)" in capsys.readouterr().err


def test_a_failing_squeue_is_engine_unavailable(tmp_path, monkeypatch):
    tools(tmp_path / "bin", monkeypatch, squeue=prints("", 1, "slurm_load_jobs error: Unable to contact slurm controller"))
    with pytest.raises(EngineUnavailable, match="squeue failed: slurm_load_jobs error"):
        verbs.queued()


def test_status_and_cancel_need_a_job_id_and_a_job_id_is_this_engines():
    for verb in (verbs.status, verbs.cancel):
        with pytest.raises(UsageError, match="needs a Slurm job id"):
            verb(Selection(), Output(color=False))
    assert verbs.claims("1234") and verbs.claims("1234_5")
    assert not verbs.claims("primus-train") and not verbs.claims("12; rm")


def test_logs_reads_the_job_under_slurm_output_dir_masked_with_the_secrets_in_scope(work, tmp_path, monkeypatch, capsys):
    """The ``work`` project forwards HF_TOKEN: a value the job printed is masked; slurm.output_dir is where the job's directory is."""
    canary = "verbs-slurm-canary-1f2e3d"
    job_dir = tmp_path / "shared" / "r1-train"
    job_dir.mkdir(parents=True)
    (job_dir / "slurm-4242.out").write_text(f"0: step 1\n1: token={canary}\n")
    with (work / ".primus.yaml").open("a") as fh:
        fh.write(f"  output_dir: {tmp_path / 'shared'}\n")
    monkeypatch.setenv("HF_TOKEN", canary)
    tools(tmp_path / "bin", monkeypatch)  # no scontrol: the job is known by its directory alone
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    assert verbs.logs(Selection(names=("4242",)), Output(color=False)) == 0
    out = capsys.readouterr().out
    assert out == "[0] step 1\n[1] token=***\n" and canary not in out


def test_logs_of_a_job_without_an_output_file_is_a_usage_error(work, tmp_path, monkeypatch):
    tools(tmp_path / "bin", monkeypatch)
    with pytest.raises(UsageError, match="no output file of job 4243 found"):
        verbs.logs(Selection(names=("4243",)), Output(color=False))
