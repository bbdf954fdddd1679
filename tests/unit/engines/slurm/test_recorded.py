"""A Slurm run in the run store: where its job's files go, what its record holds, and its end read back."""

from __future__ import annotations

import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from fake_slurm import prints, tools
from runner.engines.slurm import recorded, shared_fs


class Config:
    def __init__(self, output_dir=None):
        self.output_dir = output_dir

    def get(self, section, key, default=None):
        assert (section, key) == ("slurm", "output_dir")
        return self.output_dir or default


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state" / "primus-runner"


def test_the_job_dir_is_the_runs_own_unless_output_dir_is_set(state, tmp_path, monkeypatch):
    assert recorded.job_dir(None, "r1", "train") == state / "runs" / "r1" / "slurm"
    assert recorded.job_dir(Config(), "r1", "train") == state / "runs" / "r1" / "slurm"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert recorded.job_dir(Config("~/jobs"), "r1", "my job/../x") == tmp_path / "jobs" / "r1-my_job_.._x"


def test_unseen_names_the_path_only_when_the_nodes_do_not_see_it(tmp_path, monkeypatch):
    if shared_fs.fs_type(tmp_path) in shared_fs.NETWORK_FS:
        pytest.fail(f"{tmp_path} is on a network file system: this test needs a local one")
    tools(tmp_path / "bin", monkeypatch, scontrol=prints(f"NodeName=n1 NodeHostName={socket.gethostname()}\n"))
    assert recorded.unseen(tmp_path) is None
    tools(tmp_path / "bin", monkeypatch, scontrol=prints("NodeName=gpu7 NodeHostName=gpu7.cluster\n"))
    assert recorded.unseen(tmp_path).startswith(f"the Slurm nodes do not see the state directory {tmp_path}: it is on ")
    tools(tmp_path / "bin", monkeypatch, scontrol=prints("", 1))
    assert recorded.unseen(tmp_path) is None  # cannot be told: the submission says it itself


def test_started_records_the_job_its_files_relative_to_the_state_dir_and_its_nodes(state):
    job_dir = state / "runs" / "r1" / "slurm"
    request = SimpleNamespace(job_dir=job_dir, settings=SimpleNamespace(nodes=2))
    launched = SimpleNamespace(id="77", state={"request": request})
    assert recorded.started(launched, None) == {"job_id": "77", "nodes": 2, "job_dir": "runs/r1/slurm",
                                                "log": "runs/r1/slurm/slurm-77.out"}
    shared = SimpleNamespace(job_dir=Path("/shared/jobs/r2"), settings=SimpleNamespace(nodes=4))
    assert recorded.started(SimpleNamespace(id="78", state={"request": shared}), None) == {
        "job_id": "78", "nodes": 4, "job_dir": "/shared/jobs/r2", "log": "/shared/jobs/r2/slurm-78.out"}  # outside the state dir: as it is


def scontrol_job(state_word: str, exit_code: str = "0:0") -> str:
    return prints(f"JobId=77 JobName=primus-x JobState={state_word} ExitCode={exit_code} NodeList=n1\n")


def test_the_end_of_a_job_slurm_still_knows(state, tmp_path, monkeypatch):
    rec = {"job_id": "77", "job_dir": "runs/r1/slurm"}
    tools(tmp_path / "bin", monkeypatch, scontrol=scontrol_job("RUNNING"))
    assert recorded.ended(rec) is None
    tools(tmp_path / "bin", monkeypatch, scontrol=scontrol_job("FAILED", "7:0"))
    assert recorded.ended(rec) == (7, None)
    tools(tmp_path / "bin", monkeypatch, scontrol=scontrol_job("CANCELLED"))
    assert recorded.ended(rec) == (143, None)


def test_a_job_slurm_forgot_ends_with_its_nodes_exit_files(state, tmp_path, monkeypatch):
    job_dir = state / "runs" / "r1" / "slurm"
    job_dir.mkdir(parents=True)
    (job_dir / "exit-77-0").write_text("0\n")
    (job_dir / "exit-77-1").write_text("3\n")
    tools(tmp_path / "bin", monkeypatch, scontrol=prints("", 1, "slurm_load_jobs error: Invalid job id specified"))
    code, note = recorded.ended({"job_id": "77", "job_dir": "runs/r1/slurm"})
    assert code == 3 and note == "Slurm no longer knows the job; the exit code is from its nodes' exit files"


def test_no_end_is_read_without_a_job_or_without_slurm(state, tmp_path, monkeypatch):
    tools(tmp_path / "bin", monkeypatch)  # no scontrol
    assert recorded.ended({"job_id": "77", "job_dir": "runs/r1/slurm"}) is None
    tools(tmp_path / "bin", monkeypatch, scontrol=prints("", 1, "Unable to contact slurm controller"))
    assert recorded.ended({"job_id": "77"}) is None  # slurmctld down: asked again later
    assert recorded.ended({"job_dir": "x"}) is None
