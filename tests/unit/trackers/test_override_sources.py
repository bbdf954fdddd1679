"""Tracker overrides come only from what the user wrote in a config file, each with its file:line."""

from __future__ import annotations

import json

from plan_factory import plan_from


TRAIN = ["primus-cli", "direct", "--", "train", "pretrain", "--config", "exp.yaml"]


def plan(work, trackers: str | None, host=None):
    text = "container:\n  options:\n    image: busybox\n"
    if trackers is not None:
        text += "trackers:\n" + trackers
    return plan_from(work, text, TRAIN, host=host, flags=["--gpu", "none"], name="job-1").require()


def test_no_tracker_settings_append_no_override(work):
    """The built-in defaults (disable_* true, enable_one_logger true) never become overrides:
    they would beat an experiment YAML that turns W&B or MLflow on."""
    got = plan(work, None)
    assert got.job.command == tuple(TRAIN)
    assert got.job.trackers.overrides == () and got.job.trackers.override_sources == ()
    got = plan(work, "  framework: megatron\n")
    assert got.job.command == tuple(TRAIN)


def test_each_override_names_the_line_that_asked_for_it(work):
    got = plan(work, "  framework: megatron\n  disable_wandb: false\n  wandb_project: llama\n  enable_one_logger: false\n",
               host={"WANDB_API_KEY": "k"})
    where = str(work / ".primus.yaml")
    assert dict(got.job.trackers.override_sources) == {
        "--disable_wandb=false": f"{where}:6",
        "--wandb_project='llama'": f"{where}:7",
        "--enable_one_logger=false": f"{where}:8",
    }
    assert sorted(got.job.command[len(TRAIN):]) == sorted(("--disable_wandb=false", "--wandb_project='llama'", "--enable_one_logger=false"))
    assert "--disable_mlflow=true" not in got.job.command and "--disable_tensorboard=true" not in got.job.command


def test_mlflow_run_name_comes_with_the_line_that_turned_mlflow_on(work):
    got = plan(work, "  disable_mlflow: false\n", host={"MLFLOW_TRACKING_URI": "http://127.0.0.1:1"})
    sources = dict(got.job.trackers.override_sources)
    assert sources["--disable_mlflow=false"].endswith(".primus.yaml:5")
    assert sources["--mlflow_run_name='job-1'"].endswith(".primus.yaml:5")


def test_plan_text_and_json_list_the_overrides(work, cli):
    (work / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\ntrackers:\n  log_interval: 5\n")
    run = lambda *a: cli(*a, "plan", "--", *TRAIN, cwd=work, timeout=60)  # noqa: E731
    text = run("--verbose")  # the full view lists each override with its file:line
    assert text.returncode == 0, text.stderr
    assert f"--log_interval=5   <- {work / '.primus.yaml'}:6" in text.stdout
    doc = json.loads(run("--json").stdout)
    assert doc["trackers"]["override_sources"] == [{"override": "--log_interval=5", "from": f"{work / '.primus.yaml'}:6"}]
    assert doc["command"][-1] == "--log_interval=5"
