"""The Slurm unit tests' project: a .primus.yaml with a container and a slurm: section, in a home of its own."""

from __future__ import annotations

import pytest

SLURM_PROJECT = """\
container:
  options:
    image: primus-test/busybox:latest
    env: [FOO, HF_TOKEN, MY_API_KEY, LIT=hello]
slurm:
  nodes: 3
  partition: debug
  account: proj1
  master_port: 2345
  sbatch_args: ["--exclusive"]
"""


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".primus.yaml").write_text(SLURM_PROJECT)
    return tmp_path


@pytest.fixture
def slurm_project() -> str:
    """The project file ``work`` wrote, for a test that writes a variant of it."""
    return SLURM_PROJECT
