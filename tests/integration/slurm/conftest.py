"""The Slurm integration tests' project: a directory slurmd can read, its config and the submitting environment."""

from __future__ import annotations

import os

import pytest

from slurm_helpers import NOT_LISTED


def _yaml(image: str, partition: str) -> str:
    # privileged/caps/ulimit defaults need a real host; this sandboxed one refuses them.
    return f"""\
container:
  options:
    image: {image}
    group-add: []
    privileged: false
    ulimit: "nofile=1024:1024"
    env: [FOO, HF_TOKEN, WANDB_API_KEY, DATABRICKS_TOKEN]
slurm:
  partition: {partition}
  nodes: 2
  time: "5"
  master_port: 29500
"""


@pytest.fixture
def project(tmp_path_factory, slurm_cluster, busybox_image, canary):
    """A project directory slurmd can read, and the submitting environment (canary secrets set)."""
    work = tmp_path_factory.mktemp("slurm-project")
    (work / ".primus.yaml").write_text(_yaml(busybox_image, slurm_cluster.partition))
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "WANDB_API_KEY", "DATABRICKS_TOKEN", "FOO")}
    env.update(HOME=str(work), FOO="foo-value", NOT_LISTED_VAR=NOT_LISTED, OTHER_TOKEN=canary["MLFLOW_TRACKING_TOKEN"])
    env.update({k: canary[k] for k in ("HF_TOKEN", "WANDB_API_KEY", "DATABRICKS_TOKEN")})
    return work, env
