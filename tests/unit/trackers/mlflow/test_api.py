"""What every way of speaking MLflow shares (runner.trackers.mlflow.api): where the job's log goes in a
run, the write probe's fresh directory and data, the experiment as the handshake reads it, and an
install line that names an extra the package really declares."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

import pytest

from runner.trackers.mlflow.api import EXTRA_HINT, LOG_ARTIFACT, PROBE_DATA, Experiment, probe_dir

PYPROJECT = Path(__file__).resolve().parents[4] / "pyproject.toml"


def test_each_probe_gets_a_directory_of_its_own_one_plain_name_deep():
    with ThreadPoolExecutor(8) as pool:  # probes side by side (one per tracker check) never share one
        names = list(pool.map(lambda _: probe_dir(), range(64)))
    assert len(set(names)) == 64
    for name in names:
        assert re.fullmatch(r"primus-runner-probe-[0-9a-f]{32}", name), name


def test_the_log_is_a_relative_path_inside_the_runs_artifacts():
    path = PurePosixPath(LOG_ARTIFACT)
    assert not path.is_absolute() and ".." not in path.parts and path.parts[0] == "primus-runner"
    assert path.name == "job-output.log"
    assert PROBE_DATA.endswith(b"\n") and b"primus-runner" in PROBE_DATA  # a file a store's owner can recognise


def test_the_install_line_names_the_extra_that_brings_the_mlflow_client():
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    [extra] = re.fullmatch(r"pip install 'primus-runner\[(\w+)\]'", EXTRA_HINT).groups()
    assert any(requirement.startswith("mlflow") for requirement in extras[extra])


def test_an_experiment_is_a_value():
    experiment = Experiment("1", False, "s3://bucket/1")
    assert experiment == Experiment("1", False, "s3://bucket/1") and experiment != Experiment("1", True, "s3://bucket/1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        experiment.deleted = True  # what the handshake read is what it acts on
