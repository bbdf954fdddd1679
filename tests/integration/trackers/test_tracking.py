"""Trackers end to end: a real MLflow server, jobs in real containers, the real CLI.

The job image (``job_image``, tests/integration/job_images.py: Python with mlflow-skinny and wandb) is
built once and cached by a tag derived from its Dockerfile.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest

from docker_helpers import LABEL_JOB, Workspace, containers, force_remove, tracker_config, unique
from engine_fixtures import assert_no_leak, free_port, mlflow_api
from job_images import job_image  # noqa: F401 - a fixture


def workspace(tmp_path: Path, canary: dict, trackers: str) -> Workspace:
    return Workspace(tmp_path, canary, tracker_config(trackers + "\n")).without_host_trackers()


def run_tags(run: dict) -> dict:
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def find_run(uri: str, experiment: str, run_name: str) -> dict:
    experiment_id = mlflow_api(uri, "GET", "experiments/get-by-name", params={"experiment_name": experiment})["experiment"]["experiment_id"]
    runs = mlflow_api(uri, "POST", "runs/search", {"experiment_ids": [experiment_id], "filter": f"attributes.run_name = '{run_name}'"})["runs"]
    assert len(runs) == 1, f"expected one run named {run_name}, found {len(runs)}"
    return runs[0]


def artifact(uri: str, run: dict, path: str) -> bytes:
    root = run["info"]["artifact_uri"].split(":", 1)[1].strip("/")
    with urllib.request.urlopen(f"{uri}/api/2.0/mlflow-artifacts/artifacts/{root}/{path}", timeout=30) as r:
        return r.read()


def everything_recorded(uri: str, run: dict) -> str:
    """Params, tags, metrics and every artifact of the run, as one text to scan for canaries."""
    blob = json.dumps(run)
    listing = mlflow_api(uri, "GET", "artifacts/list", params={"run_id": run["info"]["run_id"]})
    stack = [f["path"] for f in listing.get("files", [])]
    while stack:
        path = stack.pop()
        sub = mlflow_api(uri, "GET", "artifacts/list", params={"run_id": run["info"]["run_id"], "path": path})
        if sub.get("files"):
            stack += [f["path"] for f in sub["files"]]
        else:
            blob += artifact(uri, run, path).decode("utf-8", "replace")
    return blob


# A job that prints every canary it was given (the runner must mask them before
# they reach the terminal or the uploaded log) and logs a metric with nothing
# but the forwarded environment.
JOB = """
import os, sys, mlflow
for name in ("MLFLOW_TRACKING_TOKEN", "HF_TOKEN", "WANDB_API_KEY"):
    print(name, os.environ.get(name, "-"))
assert os.environ["MLFLOW_RUN_ID"]
mlflow.log_metric("loss", 1.5)
print("logged to", os.environ["MLFLOW_EXPERIMENT_NAME"])
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.docker
@pytest.mark.mlflow
@pytest.mark.parametrize("code,status", [(0, "FINISHED"), (1, "FAILED")])
def test_mlflow_job_logs_into_the_run_the_runner_created(tmp_path, canary, mlflow_server, job_image, code, status):
    experiment, run_name = unique("exp"), unique("run")
    trackers = f"  disable_mlflow: false\n  mlflow_experiment_name: {experiment}\n  mlflow_run_name: {run_name}\n  mlflow_upload_logs: true\n"
    ws = workspace(tmp_path, canary, trackers)
    subprocess.run(["git", "init", "-q"], cwd=ws.cwd, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"], cwd=ws.cwd, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws.cwd, capture_output=True, text=True, check=True).stdout.strip()
    name = unique("mlf")
    env = {"MLFLOW_TRACKING_URI": mlflow_server}  # the server takes any token: it is forwarded as a secret all the same
    try:
        done = ws.run("up", "--image", job_image, "--name", name, "--", "python3", "-c", JOB, str(code), env=env, timeout=240)
    finally:
        force_remove(name)
    assert done.returncode == code, done.stderr.decode()
    assert b"logged to " + experiment.encode() in done.stdout
    assert_no_leak(done.stdout + done.stderr, canary, "the runner's output")

    run = find_run(mlflow_server, experiment, run_name)
    assert run["info"]["status"] == status
    assert f"/#/experiments/{run['info']['experiment_id']}/runs/{run['info']['run_id']}".encode() in done.stderr
    assert {m["key"]: m["value"] for m in run["data"]["metrics"]} == {"loss": 1.5}
    tags = run_tags(run)
    assert tags["primus-runner.image"] == job_image
    assert tags["primus-runner.job"] == name
    assert tags["primus-runner.git_commit"] == commit == tags["mlflow.source.git.commit"]
    assert len(tags["primus-runner.config_hash"]) == 64
    forwarded = tags["primus-runner.forwarded_env"].split(",")
    assert {"MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_TRACKING_TOKEN", "HF_TOKEN", "WANDB_API_KEY"} <= set(forwarded)

    log = artifact(mlflow_server, run, "primus-runner/job-output.log")
    assert b"MLFLOW_TRACKING_TOKEN ***" in log and b"HF_TOKEN ***" in log  # the masked output, uploaded
    assert_no_leak(everything_recorded(mlflow_server, run), canary, "the MLflow run (params, tags, metrics, artifacts)")


@pytest.mark.docker
def test_wandb_offline_run_under_the_forwarded_dir(tmp_path, canary, job_image):
    out_dir = tmp_path / "wandb-out"
    out_dir.mkdir()
    trackers = f"  disable_wandb: false\n  wandb_project: proj-{unique('p')}\n  wandb_save_dir: /wb\n"
    ws = workspace(tmp_path, canary, trackers)
    project = trackers.split("wandb_project: ")[1].split("\n")[0]
    ws.env.pop("WANDB_API_KEY")  # offline: no key needed
    name = unique("wb")
    job = "import wandb; run = wandb.init(); wandb.log({'loss': 2.5}); print('RUN', run.id, run.project); wandb.finish()"
    try:
        done = ws.run("up", "--image", job_image, "--name", name, "--env", "WANDB_MODE=offline", "--volume", f"{out_dir}:/wb",
                      "--", "python3", "-c", job, timeout=240)
    finally:
        force_remove(name)
    assert done.returncode == 0, done.stderr.decode()
    run_id = done.stdout.decode().split("RUN ", 1)[1].split()[0]
    assert f"W&B run {run_id} (offline".encode() in done.stderr  # the runner pre-assigned and printed it
    assert done.stdout.decode().split("RUN ", 1)[1].split()[1] == project
    [run_dir] = list((out_dir / "wandb").glob(f"offline-run-*-{run_id}"))
    record = (run_dir / f"run-{run_id}.wandb").read_bytes()
    assert project.encode() in record
    assert_no_leak(record, canary, "the W&B offline run")


@pytest.mark.docker
def test_missing_tracker_settings_exit_2_and_create_nothing(tmp_path, canary, docker_client, busybox_image):
    trackers = "  disable_tensorboard: false\n  disable_wandb: false\n  disable_mlflow: false\n"
    ws = workspace(tmp_path, canary, trackers)
    ws.env.pop("WANDB_API_KEY")
    ws.env.pop("DATABRICKS_TOKEN")
    name = unique("bad")
    done = ws.run("up", "--image", busybox_image, "--name", name, "--", "true", env={"MLFLOW_TRACKING_URI": "databricks"})
    assert done.returncode == 2
    err = done.stderr.decode()
    [message] = [line for line in err.splitlines() if line.startswith("error:")]  # one message ...
    assert "problems" in message
    for needed in ("tensorboard_dir", "WANDB_API_KEY", "DATABRICKS_HOST", "DATABRICKS_TOKEN"):  # ... listing all of them
        assert needed in err
    assert containers(f"{LABEL_JOB}={name}") == []
    assert_no_leak(done.stdout + done.stderr, canary, "the error output")


@pytest.mark.docker
def test_unreachable_server_stops_the_launch_with_exit_1(tmp_path, canary, busybox_image):
    port = free_port()  # nothing listens there
    ws = workspace(tmp_path, canary, "  disable_mlflow: false\n")
    name = unique("unr")
    done = ws.run("up", "--image", busybox_image, "--name", name, "--", "true", env={"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{port}"})
    assert done.returncode == 1
    assert f"MLflow server at http://127.0.0.1:{port} is unreachable".encode() in done.stderr
    assert containers(f"{LABEL_JOB}={name}") == []


@pytest.mark.mlflow
def test_check_online_reachable_and_unreachable(tmp_path, canary, mlflow_server, busybox_image):
    # A local image: `check --online` also asks whether the image could be pulled, and only MLflow is under test.
    ws = workspace(tmp_path, canary, "  disable_mlflow: false\n")
    ok = ws.run("--json", "check", "--online", "--gpu", "none", "--image", busybox_image, env={"MLFLOW_TRACKING_URI": mlflow_server})
    report = json.loads(ok.stdout)
    assert report["trackers"] == [{"tracker": "mlflow", "status": "reachable", "detail": report["trackers"][0]["detail"]}]
    assert not report["problems"]
    port = free_port()  # nothing listens there
    bad = ws.run("--json", "check", "--online", "--timeout", "3", "--gpu", "none", "--image", busybox_image,
                 env={"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{port}"})
    assert bad.returncode == 2
    report = json.loads(bad.stdout)
    assert report["trackers"][0]["status"] == "unreachable"
    assert any("mlflow: unreachable" in p["message"] for p in report["problems"])
    assert_no_leak(ok.stdout + ok.stderr + bad.stdout + bad.stderr, canary, "check --online output")


@pytest.mark.mlflow
def test_handshake_tags_never_hold_a_value_and_kill_marks_killed(make_plan, canary, mlflow_server):
    """begin/finish directly (no container): KILLED for 143, a job-closed run still FAILED for exit 1."""
    from runner.trackers import handshake as tracker_runs
    from runner.ui import Output

    host = {**canary, "MLFLOW_TRACKING_URI": mlflow_server, "MLFLOW_TRACKING_USERNAME": "alice"}
    planned = make_plan("container:\n  options:\n    image: img\ntrackers:\n  disable_mlflow: false\n", host=host,
                        flags=["--gpu", "none"], name=unique("hs"))
    out = Output(masker=planned.scope.masker)
    for code, expected in ((143, "KILLED"), (130, "KILLED"), (1, "FAILED")):
        hs = tracker_runs.begin(planned.plan, out)
        run_id = hs.env["MLFLOW_RUN_ID"]
        if code == 1:  # the job's client closed it FINISHED (mlflow's atexit does) but the process failed
            mlflow_api(mlflow_server, "POST", "runs/update", {"run_id": run_id, "status": "FINISHED"})
        hs.finish(code, b"")
        run = mlflow_api(mlflow_server, "GET", "runs/get", params={"run_id": run_id})["run"]
        assert run["info"]["status"] == expected
        assert run["info"]["run_name"] == planned.plan.job.name
        assert hs.env["MLFLOW_EXPERIMENT_NAME"] == "Default"
        assert_no_leak(json.dumps(run), canary, "the run's params and tags")
