"""A ``file:`` tracking URI gets the run handshake: the runner creates the run in the directory as MLflow's
FileStore lays it out, hands its id to the job, and closes it. (MLflow's own client reading these runs, and a
job logging into one, is in tests/integration/trackers/test_mlflow_stores.py; ranks and a requeue sharing it, in
test_slurm_faults.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from plan_factory import plan_from

from runner.errors import EngineUnavailable
from runner.plan import LaunchFlags
from runner.trackers import handshake as tracker_runs
from runner.ui import Output

TRACKERS = "trackers:\n  framework: generic\n  disable_mlflow: false\n  mlflow_upload_logs: true\n"


def _plan(work: Path, uri: str, experiment: str | None = "exp-a", name: str = "job-1"):
    trackers = TRACKERS + (f"  mlflow_experiment_name: {experiment}\n" if experiment else "")
    planned = plan_from(work, "container:\n  options:\n    image: busybox\n" + trackers, host={"MLFLOW_TRACKING_URI": uri},
                        flags=LaunchFlags(gpu="none"), name=name)
    assert not planned.problems, planned.problems
    return planned


def _begin(planned):
    return tracker_runs.begin(planned.plan, Output(masker=planned.scope.masker))


def _meta(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("form", ["uri", "path"])
def test_the_runner_creates_the_run_and_hands_its_id_to_the_job(work, form):
    root = work / "mlruns"
    root.mkdir()
    planned = _plan(work, root.as_uri() if form == "uri" else str(root), name="job-fs")
    hs = _begin(planned)
    run_id, experiment_id = hs.env["MLFLOW_RUN_ID"], hs.env["MLFLOW_EXPERIMENT_ID"]
    assert hs.env["MLFLOW_EXPERIMENT_NAME"] == "exp-a"
    run_dir = root / experiment_id / run_id
    assert hs.links["mlflow"] == str(run_dir)
    meta = _meta(run_dir / "meta.yaml")
    assert meta["run_id"] == run_id and meta["status"] == 1 and meta["experiment_id"] == experiment_id  # RUNNING
    assert meta["artifact_uri"] == f"{_meta(root / experiment_id / 'meta.yaml')['artifact_location']}/{run_id}/artifacts"
    assert {p.name for p in run_dir.iterdir()} >= {"metrics", "params", "artifacts", "tags", "meta.yaml"}
    assert (run_dir / "tags" / "primus-runner.job").read_text() == "job-fs"
    assert (run_dir / "tags" / "mlflow.runName").read_text() == "job-fs"
    assert _meta(root / "0" / "meta.yaml")["name"] == "Default"  # a new store starts as MLflow starts one
    hs.finish(1, b"the job's output\n")
    meta = _meta(run_dir / "meta.yaml")
    assert meta["status"] == 4 and meta["end_time"] >= meta["start_time"]  # FAILED
    assert (run_dir / "artifacts" / "primus-runner" / "job-output.log").read_bytes() == b"the job's output\n"


def test_launches_into_one_experiment_share_it_and_each_gets_a_run(work):
    root = work / "mlruns"
    root.mkdir()
    first, second = _begin(_plan(work, root.as_uri())), _begin(_plan(work, root.as_uri()))
    assert first.env["MLFLOW_EXPERIMENT_ID"] == second.env["MLFLOW_EXPERIMENT_ID"]
    assert first.env["MLFLOW_RUN_ID"] != second.env["MLFLOW_RUN_ID"]
    named = [p for p in root.glob("*/meta.yaml") if _meta(p)["name"] == "exp-a"]
    assert len(named) == 1


def test_the_default_experiment_is_zero(work):
    root = work / "mlruns"
    root.mkdir()
    hs = _begin(_plan(work, root.as_uri(), experiment=None))
    assert hs.env["MLFLOW_EXPERIMENT_ID"] == "0" and hs.env["MLFLOW_EXPERIMENT_NAME"] == "Default"
    hs.finish(143, b"")
    assert _meta(root / "0" / hs.env["MLFLOW_RUN_ID"] / "meta.yaml")["status"] == 5  # KILLED


def test_a_job_that_closed_its_run_failed_keeps_that(work):
    root = work / "mlruns"
    root.mkdir()
    hs = _begin(_plan(work, root.as_uri()))
    meta_path = root / hs.env["MLFLOW_EXPERIMENT_ID"] / hs.env["MLFLOW_RUN_ID"] / "meta.yaml"
    meta_path.write_text(yaml.safe_dump({**_meta(meta_path), "status": 5}))
    hs.finish(0, b"")
    assert _meta(meta_path)["status"] == 5


@pytest.mark.parametrize("uri", ["file:///nowhere-on-this-host/mlruns", "./mlruns", "file:mlruns"])
def test_a_store_not_on_this_host_gets_no_handshake(work, uri, capsys):
    hs = _begin(_plan(work, uri))
    assert hs.env == {}
    assert "no run handshake" in capsys.readouterr().err
    assert not (work / "mlruns").exists()


def test_a_deleted_experiment_stops_the_launch(work):
    root = work / "mlruns"
    (root / ".trash" / "123").mkdir(parents=True)
    (root / ".trash" / "123" / "meta.yaml").write_text(yaml.safe_dump(
        {"experiment_id": "123", "name": "exp-a", "lifecycle_stage": "deleted", "artifact_location": "file:///x"}))
    with pytest.raises(EngineUnavailable) as info:
        _begin(_plan(work, root.as_uri()))
    assert "deleted" in info.value.message and not list(root.glob("[!.]*/*/meta.yaml"))  # no run created


def test_check_online_probes_the_file_store(work):
    root = work / "mlruns"
    root.mkdir()
    _begin(_plan(work, root.as_uri()))  # the experiment exists now
    [result] = tracker_runs.online_check(_plan(work, root.as_uri()).plan, timeout=5)
    assert result["status"] == "reachable" and "writable (probe written and removed)" in result["detail"], result
    assert not list(root.rglob("primus-runner-probe*"))


def test_a_store_the_job_sees_through_a_mount_is_written_on_the_host_side(work):
    """Inside the job the store is /job/mlruns; on the host it is the mount's source: the runner writes there,
    and every location it records is the job's view."""
    from dataclasses import replace

    from runner.plan import Mount

    host = work / "host-mlruns"
    host.mkdir()
    planned = _plan(work, "file:///job/mlruns")
    plan = replace(planned.plan, container=replace(planned.plan.container, mounts=(Mount(str(host), "/job/mlruns"),)))
    hs = tracker_runs.begin(plan, Output(masker=planned.scope.masker))
    run_dir = host / hs.env["MLFLOW_EXPERIMENT_ID"] / hs.env["MLFLOW_RUN_ID"]
    assert hs.links["mlflow"] == str(run_dir)
    assert _meta(run_dir / "meta.yaml")["artifact_uri"].startswith("file:///job/mlruns/")
    hs.finish(0, b"log\n")
    assert (run_dir / "artifacts" / "primus-runner" / "job-output.log").read_bytes() == b"log\n"
    assert not Path("/job/mlruns").exists()
