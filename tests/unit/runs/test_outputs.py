"""Tracker output paths resolved against the job's mounts: on the host, mounted from the run, or refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.launch_plan import ContainerSpec, JobSpec, LaunchPlan, Mount
from runner.policy import EnvDecision
from runner.runs import outputs
from runner.trackers.config import TrackerPlan


def _plan(settings: dict, enabled=("tensorboard", "wandb"), env: dict | None = None, mounts=(), workdir=None, framework="megatron") -> LaunchPlan:
    decisions = tuple(EnvDecision(k, True, False, "test", "env", v) for k, v in (env or {}).items())
    job = JobSpec(command=("true",), name="job", gpu="none", env=decisions,
                  trackers=TrackerPlan(framework, tuple(enabled), settings, wandb_mode="offline"), workdir=workdir)
    return LaunchPlan(job, ContainerSpec(image="img:1", mounts=tuple(mounts)))


def test_a_path_under_a_mount_is_on_the_host_at_the_mounts_source(tmp_path):
    plan = _plan({"tensorboard_dir": "/data/tb/run1"}, enabled=("tensorboard",), mounts=[Mount("/srv/data", "/data")])
    new, found, problems = outputs.plan_outputs(plan, "mount", tmp_path, on_nodes=False)
    assert not problems and new.container.mounts == plan.container.mounts
    assert [(o.tracker, o.host, o.how) for o in found] == [("tensorboard", "/srv/data/tb/run1", "mount")]


def test_a_path_under_no_mount_is_mounted_from_the_run_directory(tmp_path):
    plan = _plan({"tensorboard_dir": "/tmp/tb", "wandb_save_dir": "/tmp/wandb"}, env={"WANDB_DIR": "/tmp/wandb"})
    new, found, problems = outputs.plan_outputs(plan, "mount", tmp_path / "outputs", on_nodes=False)
    assert not problems
    assert {(m.source, m.target) for m in new.container.mounts} == {(str(tmp_path / "outputs/tmp/tb"), "/tmp/tb"), (str(tmp_path / "outputs/tmp/wandb"), "/tmp/wandb")}
    assert {o.setting: o.host for o in found} == {"trackers.tensorboard_dir": str(tmp_path / "outputs/tmp/tb"),
                                                   "trackers.wandb_save_dir": str(tmp_path / "outputs/tmp/wandb")}


def test_refuse_names_the_path_the_setting_and_the_fix(tmp_path):
    plan = _plan({"tensorboard_dir": "/tmp/tb"}, enabled=("tensorboard",))
    _, _, problems = outputs.plan_outputs(plan, "refuse", tmp_path, on_nodes=False)
    (problem,) = problems
    assert "/tmp/tb" in problem.message and "trackers.tensorboard_dir" in problem.message
    assert "--volume" in problem.hint and "runs.tracker_outputs: mount" in problem.hint


def test_wandb_without_a_directory_gets_one_of_the_run(tmp_path):
    new, found, _ = outputs.plan_outputs(_plan({}, enabled=("wandb",)), "refuse", tmp_path, on_nodes=False)
    assert new.job.public_env()["WANDB_DIR"] == "/primus-runner/wandb"  # W&B's output_dir_env, under the runner's root
    assert [(o.path, o.how) for o in found] == [("/primus-runner/wandb", "run")]


def test_a_file_mlflow_store_and_a_relative_torchtitan_folder(tmp_path):
    plan = _plan({"metrics": {"save_tb_folder": "tb"}}, enabled=("tensorboard", "mlflow"), framework="torchtitan",
                 env={"MLFLOW_TRACKING_URI": "file:///mlruns"}, workdir="/work", mounts=[Mount("/home/u/w", "/work")])
    _, found, _ = outputs.plan_outputs(plan, "refuse", tmp_path, on_nodes=False)
    by = {o.tracker: o for o in found}
    assert (by["tensorboard"].path, by["tensorboard"].host, by["tensorboard"].setting) == ("/work/tb", "/home/u/w/tb", "trackers.metrics.save_tb_folder")
    assert "mlflow" not in by  # refused instead (no mount holds /mlruns)


def test_refused_file_store(tmp_path):
    plan = _plan({}, enabled=("mlflow",), env={"MLFLOW_TRACKING_URI": "file:/mlruns"})
    _, _, problems = outputs.plan_outputs(plan, "refuse", tmp_path, on_nodes=False)
    assert len(problems) == 1 and "/mlruns" in problems[0].message and "MLFLOW_TRACKING_URI" in problems[0].message


def test_after_the_job_the_wandb_sync_path_exists(tmp_path):
    host = tmp_path / "outputs/tmp/wandb"
    run = host / "wandb" / "offline-run-20260101_000000-abc12345"
    run.mkdir(parents=True)
    found = [outputs.TrackerOutput("wandb", "WANDB_DIR", "/tmp/wandb", str(host), "run")]
    (line,) = outputs.after(found, _plan({}, enabled=("wandb",)), {"wandb": "abc12345"})
    assert line.endswith(f"wandb sync {run}") and Path(line.rsplit(" ", 1)[1]).is_dir()
