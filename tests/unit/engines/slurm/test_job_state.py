"""runner.engines.slurm.job_state: Slurm's words for a job's state and exit, the progress line, how
often slurmctld is asked, and which node's agent was lost."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runner.engines.slurm import job_state, node


SCONTROL = (
    "JobId=42 JobName=primus-x UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 Nice=0 Account=(null) "
    "QOS=(null) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 "
    "Reboot=0 ExitCode=7:0 RunTime=00:00:02 TimeLimit=04:00:00 NodeList=n[1-2] BatchHost=n1 "
    "TRES=cpu=2,mem=1M,node=2,billing=2 Socks/Node=* ReqB:S:C:T=0:0:*:* Command=/tmp/a b/job.sbatch WorkDir=/tmp/a b"
)


def test_parse_scontrol_job_line():
    fields = node.parse_job(SCONTROL)
    assert fields["JobState"] == "FAILED" and fields["NodeList"] == "n[1-2]"
    assert fields["TRES"] == "cpu=2,mem=1M,node=2,billing=2"
    assert fields["Command"] == "/tmp/a b/job.sbatch" and fields["WorkDir"] == "/tmp/a b"
    assert job_state.exit_code_of(fields) == 7


@pytest.mark.parametrize(
    "exit_code,expected", [("0:0", 0), ("7:0", 7), ("0:15", 143), ("0:9", 137), ("", None)]
)
def test_exit_code_of(exit_code, expected):
    assert job_state.exit_code_of({"ExitCode": exit_code}) == expected


@pytest.mark.parametrize(
    "raw,state", [("PENDING", "pending"), ("RUNNING", "running"), ("COMPLETING", "running"), ("COMPLETED", "completed"),
                  ("FAILED", "failed"), ("NODE_FAIL", "failed"), ("CANCELLED", "cancelled"), ("TIMEOUT", "timeout")]
)
def test_state_names(raw, state):
    assert job_state.STATES[raw] == state


def test_final_exit_code_falls_back_to_the_agents_files(tmp_path):
    (tmp_path / "exit-5-0").write_text("0\n")
    (tmp_path / "exit-5-1").write_text("9\n")
    assert job_state.final_exit_code(None, tmp_path, "5") == 9
    cancelled = job_state.JobState("5", "cancelled", 0, "CANCELLED", {})
    assert job_state.final_exit_code(cancelled, tmp_path, "5") == 143
    failed = job_state.JobState("5", "failed", 3, "FAILED", {})
    assert job_state.final_exit_code(failed, tmp_path, "5") == 3


def test_unknown_job_id_is_a_usage_error():
    result = subprocess.run([sys.executable, "-m", "runner", "status", "not-a-job"], capture_output=True, text=True)
    assert result.returncode == 2


def test_backoff_doubles_to_the_cap_and_resets_on_a_change():
    b = job_state.Backoff(1.5, 30.0)
    assert [b.next(False) for _ in range(6)] == [3.0, 6.0, 12.0, 24.0, 30.0, 30.0]
    assert b.next(True) == 1.5 and b.next(False) == 3.0


def test_progress_line_has_state_reason_nodes_time_and_restarts():
    pending = node.parse_job("JobId=7 JobState=PENDING Reason=Priority Restarts=0 SubmitTime=2026-01-01T00:00:00 RunTime=00:00:00 NodeList=(null)")
    state = job_state.JobState("7", "pending", None, "PENDING", pending)
    assert job_state.progress_text("7", state, elapsed=42).startswith("job 7: PENDING (Priority), for 0:42")
    running = node.parse_job("JobId=7 JobState=RUNNING Reason=None Restarts=2 RunTime=01:02:03 NodeList=n[1-2]")
    state = job_state.JobState("7", "running", None, "RUNNING", running)
    assert job_state.progress_text("7", state) == "job 7: RUNNING on n[1-2], for 1:02:03, restarted 2 time(s)"
    assert job_state.describe(state) == {"slurm_state": "RUNNING", "reason": None, "nodes": "n[1-2]", "elapsed": 3723, "restarts": 2}
    done = job_state.JobState("7", "timeout", 143, "TIMEOUT", node.parse_job("JobId=7 JobState=TIMEOUT Reason=TimeLimit RunTime=00:01:00 NodeList=n[1-2]"))
    assert job_state.progress_text("7", done) == "job 7: TIMEOUT (exit 143), after 1:00"


def test_lost_agents_are_the_nodes_of_a_failed_job_without_an_exit_file(tmp_path):
    failed = job_state.JobState("9", "failed", 1, "FAILED", {"NodeList": "n[1-2]"})
    (tmp_path / "exit-9-0").write_text("0\n")
    lost = job_state.lost_agents(failed, tmp_path, "9")
    assert len(lost) == 1 and "on n2 (rank 1)" in lost[0]
    done = job_state.JobState("9", "completed", 0, "COMPLETED", {"NodeList": "n[1-2]"})
    assert job_state.lost_agents(done, tmp_path, "9") == [] and job_state.lost_agents(None, tmp_path, "9") == []
