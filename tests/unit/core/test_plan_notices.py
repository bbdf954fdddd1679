"""`plan` (in its body) and the launch notice name what matters: allowlisted names that are unset, never the
optional tracker variables that are simply absent (WANDB_ENTITY, MLFLOW_EXPERIMENT_ID, AWS_* …)."""

from __future__ import annotations

import json
import os

from runner.trackers.mlflow.settings import MLFLOW_NAMES, STORE_NAMES
from runner.trackers.wandb_settings import WANDB_NAMES


def test_absent_optional_tracker_names_are_not_listed(tmp_path, cli):
    (tmp_path / ".primus.yaml").write_text(
        "container:\n  gpu: none\n  options:\n    image: busybox\n    env: [MY_SETTING]\n"
        "trackers:\n  disable_wandb: false\n  disable_mlflow: false\n")
    unset = tuple(k for k in os.environ if k.startswith(("AWS", "AZURE", "GOOGLE")))
    env = {"WANDB_API_KEY": "k" * 40, "MLFLOW_TRACKING_URI": "http://127.0.0.1:9"}
    result = cli("--json", "plan", "--", "true", env=env, unset=unset, timeout=60)
    assert result.returncode == 0, result.stderr
    skipped = {s["name"] for s in json.loads(result.stdout)["skipped"]}
    optional = set(WANDB_NAMES + MLFLOW_NAMES + STORE_NAMES) - {"WANDB_API_KEY", "MLFLOW_TRACKING_URI"}
    assert "MY_SETTING" in skipped and not skipped & optional, skipped
    assert "notice:" not in result.stderr  # plan lists the skipped names itself: no second report
    launch = cli("up", "--", "true", env={**env, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}, unset=unset, timeout=60)
    assert launch.returncode == 1, launch.stderr  # the notice comes before the engine is asked
    (notice,) = [line for line in launch.stderr.splitlines() if line.startswith("notice: not set on this host")]
    assert "MY_SETTING" in notice and not any(name in notice.split(": ", 2)[-1].split(", ") for name in optional)
