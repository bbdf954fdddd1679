"""runner.engines.slurm.job_wait: following a job to its end off a terminal, one line per change (CI logs)."""

from __future__ import annotations

from runner.engines.slurm import job_wait
from runner.engines.slurm.job_state import JobState
from runner.secrets import Masker
from runner.ui import Output

CANARY = "canary-slurm-wait-90d3f2b1"


def test_off_a_terminal_each_change_is_one_masked_line_and_the_end_is_said(capsys):
    progress = job_wait._Progress(Output(color=False, masker=Masker([CANARY])), "7")
    assert progress.live is None and progress.write("job output\n") is False  # the caller writes the job's output
    progress.change(JobState("7", "pending", None, "PENDING", {"Reason": f"Held_{CANARY}"}))
    progress.change(JobState("7", "running", None, "RUNNING", {"NodeList": "n[1-2]", "RunTime": "00:00:05"}))
    progress.close(JobState("7", "completed", 0, "COMPLETED", {"RunTime": "00:01:05"}))
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("job 7: PENDING (Held_***)") and CANARY not in "".join(err)
    assert err[1] == "job 7: RUNNING on n[1-2], for 0:05"
    assert err[2] == "job 7: COMPLETED (exit 0), after 1:05" and len(err) == 3


def test_the_agents_exit_files_are_counted(tmp_path):
    assert job_wait._exit_files(tmp_path, "5") == 0
    (tmp_path / "exit-5-0").write_text("0\n")
    (tmp_path / "exit-5-1").write_text("3\n")
    (tmp_path / "exit-6-0").write_text("0\n")
    assert job_wait._exit_files(tmp_path, "5") == 2
    assert job_wait._exit_files(tmp_path / "gone", "5") == 0
