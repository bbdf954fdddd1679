"""runner.runs asks the engine, never its name: a toy engine on nodes, registered by its one line in
``ENGINES``, gets a job directory of its own, no runner log, the tracker outputs beside its files, a
record that says what it says, and its own end and output read back later (``runs``, ``logs RUN``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.engines import ENGINES
from runner.engines.base import EngineBase, Launched

SEEN: dict[str, object] = {}


class NodesEngine(EngineBase):
    """The least an engine on other hosts states for the run store (``runner.engines.base.Recorded``)."""

    name = "toynodes"
    runs_on_nodes = True
    job_dir_setting = "toynodes.shared_dir"

    @staticmethod
    def job_dir(config, run_id: str, name: str) -> Path:
        return Path(SEEN["shared"]) / f"{run_id}-{name}"

    @staticmethod
    def record_started(launched, job_dir) -> dict:
        return {"job_id": launched.id, "job_dir": str(job_dir), "log": str(job_dir / "toy.out")}

    @staticmethod
    def record_ended(rec: dict):
        SEEN["ended"] = rec["job_id"]
        return 3, "the toy's queue says it ended"

    @staticmethod
    def record_logs(rec: dict, out, *, follow: bool, tail, node) -> int:
        SEEN["logs"] = (rec["job_id"], follow, tail, node)
        return 0


@pytest.fixture
def toy(tmp_path, monkeypatch, begin):
    """``begin`` (conftest) of a launch on the toy, registered by its one line in ``ENGINES``."""
    from runner.engines import engine_for

    monkeypatch.setitem(ENGINES, "toynodes", (__name__, "NodesEngine"))
    SEEN.clear()
    SEEN["shared"] = tmp_path / "shared"
    yield lambda: begin(engine_for("toynodes"), detach=True)
    SEEN.clear()


class _Handshake:
    env: dict = {}
    links: dict = {}


def test_an_engine_on_nodes_states_its_job_directory_and_keeps_no_runner_log(toy):
    run, _, _ = toy()
    assert run.job_dir == SEEN["shared"] / f"{run.id}-{run.plan.job.name}"
    assert run.log is None  # the job's output is in its own files
    mounts = {m.target: m.source for m in run.plan.container.mounts}
    assert mounts["/tmp/tb"].startswith(str(run.job_dir / "outputs"))  # the tracker outputs with the job's files
    run.started(Launched("toy-7", run.plan.job.name), _Handshake(), detached=True)
    assert run.record["job_id"] == "toy-7" and run.record["log"] == str(run.job_dir / "toy.out")


def test_the_run_store_reads_the_end_and_the_output_back_through_the_engine(toy):
    from runner.runs import commands
    from runner.runs.reading import open_store

    run, opts, out = toy()
    run.started(Launched("toy-8", run.plan.job.name), _Handshake(), detached=True)
    rec = commands.find(open_store(), run.id)
    assert SEEN["ended"] == "toy-8"
    assert rec["state"] != "running" and rec["exit_code"] == 3 and rec["note"] == "the toy's queue says it ended"
    assert commands.recorded_logs(run.id, out, opts.sources, tail=5) == 0
    assert SEEN["logs"] == ("toy-8", False, 5, None)
