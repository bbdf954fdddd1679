"""The Primus stand-in the launcher tests run against (tests/fixtures/primus-standin): its image,
a project with a Primus checkout whose direct launcher is the stand-in, and what the stand-in printed.

Test files import the fixtures ``standin_image`` and ``space`` from here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine_fixtures import SLURM_PARTITION, engine_missing
from ux_helpers import REPO as ROOT

STANDIN = ROOT / "tests" / "fixtures" / "primus-standin"
IMAGE = "primus-test/primus-standin:latest"
RUNNER = [sys.executable, "-P", "-m", "runner"]
TRAIN = ["train", "pretrain", "--config", "exp.yaml"]
CONFIG = f"""container:
  gpu: none
  stop_timeout: 2
  options:
    image: {IMAGE}
    group-add: []
    name: primus-training
slurm:
  partition: {SLURM_PARTITION}
  time: "5"
"""


def build_standin_image() -> str:
    """primus-test/primus-standin, built by .ci/setup-primus-standin.sh if missing (a missing engine fails under CI)."""
    setup = subprocess.run(["bash", str(ROOT / ".ci" / "setup-primus-standin.sh")], capture_output=True, text=True)
    if setup.returncode != 0:
        engine_missing("the stand-in Primus image", setup.stderr[-500:], "run bash .ci/setup-primus-standin.sh")
    return IMAGE


@pytest.fixture(scope="session")
def standin_image(docker_client) -> str:
    return build_standin_image()


class Space:
    """A project directory, a Primus checkout (its runner/primus-cli-direct.sh is the stand-in), a HOME."""

    def __init__(self, root: Path, canary: dict[str, str], config: str = CONFIG):
        self.root = root
        self.project = root / "project"
        self.checkout = root / "Primus"
        self.home = root / "home"
        for d in (self.project, self.checkout / "runner", self.home):
            d.mkdir(parents=True, exist_ok=True)
        shutil.copy(STANDIN / "standin.sh", self.checkout / "runner" / "primus-cli-direct.sh")  # one stand-in for both launchers
        (self.project / ".primus.yaml").write_text(config)
        self.config = self.project / ".primus.yaml"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("PRIMUS_", "NCCL_", "RCCL_", "GLOO_", "IONIC_", "HIPBLASLT_", "SLURM_"))}
        for name in ("HF_TOKEN", "WANDB_API_KEY", "DATABRICKS_TOKEN", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN", "DOCKER_HOST"):
            self.env.pop(name, None)
        self.env.update(HOME=str(self.home), NO_COLOR="1", HF_TOKEN=canary["HF_TOKEN"], HOST_ONLY="host-only-value-q81z")
        self.canary = canary

    def run(self, *args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
        return subprocess.run([*RUNNER, *args], cwd=cwd or self.project, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def space(tmp_path, canary, standin_image) -> Space:
    return Space(tmp_path, canary)


def seen(output: str) -> dict[str, dict]:
    """What the stand-in printed, per rank ("" on Docker and this host; "0", "1" on Slurm)."""
    found: dict[str, dict] = {}
    for line in output.splitlines():
        m = re.match(r"^(?:\[(\d+)\] )?standin(-\w+)?(?:\[(\d+)\])?[:=] ?(.*)$", line)
        if not m:
            continue
        rank, kind, _, value = m.group(1) or "", m.group(2) or "", m.group(3), m.group(4)
        got = found.setdefault(rank, {"path": None, "args": [], "env": {}, "pwd": None, "secretlen": None})
        if kind == "":
            got["path"] = value
        elif kind == "-pwd":
            got["pwd"] = value
        elif kind == "-arg":
            got["args"].append(value[1:-1])
        elif kind == "-env":
            name, _, val = value.partition("=")
            got["env"][name] = val
        elif kind == "-secretlen":
            got["secretlen"] = value
    return found


# A second local user with its own interpreter (.ci/setup-primus-standin.sh makes both): owner scope.
OTHER_USER = "primus-second"
OTHER_PYTHON = "/opt/primus-second-venv/bin/python"
