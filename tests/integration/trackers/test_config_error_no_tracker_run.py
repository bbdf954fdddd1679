"""A config error a launch would hit stops it before any tracker run exists: a real `up` (or
`submit`) with such a config leaves no MLflow run behind (before, the request was built after
the handshake, so the error left a FAILED run)."""

from __future__ import annotations

import urllib.error

import pytest

from docker_helpers import CONFIG, Workspace, unique
from engine_fixtures import mlflow_api


def _runs(uri: str, experiment: str) -> list[dict]:
    try:
        found = mlflow_api(uri, "GET", "experiments/get-by-name", params={"experiment_name": experiment})
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return []  # not even the experiment was created
        raise
    return mlflow_api(uri, "POST", "runs/search", {"experiment_ids": [found["experiment"]["experiment_id"]]}).get("runs", [])


@pytest.mark.parametrize("command,bad", [
    (["up"], ("    ulimit: []\n", "    ulimit: [\"nofile=lots\"]\n")),
    (["up"], ("    group-add: []\n", "    group-add: []\n    shm-size: lots\n")),
    (["submit", "--nodes", "1"], ("passthrough:\n", "slurm:\n  partition: \"a b\"\npassthrough:\n")),
])
def test_a_config_error_leaves_no_mlflow_run(tmp_path, canary, mlflow_server, busybox_image, command, bad):
    experiment = unique("dryrun-exp")
    config = CONFIG.replace(*bad) + f"trackers:\n  disable_mlflow: false\n  mlflow_experiment_name: {experiment}\n"
    assert bad[1] in config
    ws = Workspace(tmp_path, canary, config)
    result = ws.run(*command, "--", "true", env={"MLFLOW_TRACKING_URI": mlflow_server})
    assert result.returncode == 2, result.stderr.decode()
    assert b".primus.yaml:" in result.stderr
    assert _runs(mlflow_server, experiment) == []
