"""runner.engines.slurm.job_cancel: what a cancel finds of a job before it removes its containers."""

from __future__ import annotations

from runner.engines.slurm.job_cancel import plan_file_of
from runner.engines.slurm.job_state import JobState


def test_cancel_finds_the_plan_file_next_to_the_runner_batch_script(tmp_path):
    state = JobState("7", "running", None, "RUNNING", {"Command": str(tmp_path / "job" / "job.sbatch")})
    assert plan_file_of(state) == tmp_path / "job" / "plan.json"
    assert plan_file_of(JobState("8", "running", None, "RUNNING", {"Command": "/home/u/other.sh"})) is None
