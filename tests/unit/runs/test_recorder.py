"""The run store decides a run's placement (its job directory, its tracker outputs) from reads alone,
before the dry run: a dry run shows the directories its launch uses, even where the state directory
cannot be made, and the dry run writes nothing."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from runner.engines.base import EngineBase
from runner.runs import paths


class RunDirEngine(EngineBase):
    """An engine on nodes whose job directory is under the run's own directory (as Slurm's default is)."""

    name = "toyrundir"
    runs_on_nodes = True
    job_dir_setting = "toyrundir.shared_dir"

    @staticmethod
    def job_dir(config, run_id: str, name: str) -> Path:
        return paths.runs_dir() / run_id / "job"


def _placement(run) -> tuple:
    """The run's placement with its id and default name taken out (each begin draws its own)."""
    def plain(path) -> str:
        return str(path).replace(run.id, "RUN").replace(run.plan.job.name, "NAME")

    return plain(run.job_dir), sorted((m.target, plain(m.source)) for m in run.plan.container.mounts)


def test_a_state_directory_that_cannot_be_made_moves_the_job_and_its_outputs_in_the_dry_run_too(tmp_path, monkeypatch, begin):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the state directory would go")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker / "state"))
    dry, _, _ = begin(RunDirEngine(), detach=True, dry_run=True)
    launched, _, _ = begin(RunDirEngine(), detach=True)
    assert _placement(dry) == _placement(launched)
    job_dir, mounts = _placement(dry)
    assert job_dir == str(tmp_path / "project" / "primus-runs" / "RUN-NAME")
    assert dict(mounts)["/tmp/tb"].startswith(job_dir + "/outputs")  # the tracker outputs with the job's files


def test_outputs_that_cannot_go_under_the_run_go_to_a_directory_named_by_the_run_id_in_both(tmp_path, monkeypatch, begin):
    from runner.engines.docker import DockerEngine

    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker / "state"))
    dry, _, _ = begin(DockerEngine(), dry_run=True)
    launched, _, out = begin(DockerEngine())
    assert _placement(dry) == _placement(launched)
    tb = dict(_placement(launched)[1])["/tmp/tb"]
    made = Path(tempfile.gettempdir()) / f"primus-runner-outputs-{launched.id}"
    try:
        assert tb.startswith(str(made).replace(launched.id, "RUN") + "/") and Path(tb.replace("RUN", launched.id)).is_dir()
        assert not Path(tb.replace("RUN", dry.id)).exists()  # the dry run made nothing
    finally:
        shutil.rmtree(made, ignore_errors=True)
