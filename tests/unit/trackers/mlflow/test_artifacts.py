"""The job's log written straight into a directory store (no MLflow client), never through a planted symlink."""

from __future__ import annotations

import os

import pytest

from runner.trackers.mlflow import artifacts
from runner.trackers.mlflow.api import LOG_ARTIFACT, PROBE_DATA


@pytest.mark.parametrize("uri, want", [
    ("file:///srv/mlruns/1/abc/artifacts", "/srv/mlruns/1/abc/artifacts"),
    ("file://localhost/srv/a%20b", "/srv/a b"),
    ("/srv/mlruns/../runs", "/srv/runs"),
    ("file://otherhost/srv/x", None),
    ("relative/dir", None),
    ("s3://bucket/key", None),
    ("mlflow-artifacts:/1/abc/artifacts", None),
])
def test_local_path(uri, want):
    assert artifacts.local_path(uri) == want


def test_which_stores_it_writes_itself():
    assert artifacts.writes_directly("file:///x") and artifacts.writes_directly("/x") and artifacts.writes_directly("s3://b/k")
    assert not artifacts.writes_directly("gs://b/k") and not artifacts.writes_directly("mlflow-artifacts:/x")
    assert not artifacts.writes_directly("dbfs:/databricks/mlflow-tracking/1")


def test_the_log_lands_where_mlflows_local_store_puts_it(tmp_path):
    artifacts.upload(f"file://{tmp_path}/1/run/artifacts", b"masked output\n")
    assert (tmp_path / "1/run/artifacts" / LOG_ARTIFACT).read_bytes() == b"masked output\n"
    artifacts.upload(str(tmp_path / "1/run/artifacts"), b"again\n")  # a second upload replaces it
    assert (tmp_path / "1/run/artifacts" / LOG_ARTIFACT).read_bytes() == b"again\n"


def test_a_planted_symlink_is_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    target = tmp_path / "store" / LOG_ARTIFACT
    target.parent.mkdir(parents=True)
    target.symlink_to(victim)
    with pytest.raises(OSError):
        artifacts.write_artifact(str(tmp_path / "store"), LOG_ARTIFACT, b"overwritten")
    assert victim.read_bytes() == b"untouched"


def test_the_probe_writes_and_removes_its_own_directory(tmp_path, monkeypatch):
    seen = []
    real = artifacts.write_artifact

    def spy(directory, relative, data):
        real(directory, relative, data)
        seen.append((relative, (tmp_path / relative).read_bytes()))

    monkeypatch.setattr(artifacts, "write_artifact", spy)
    artifacts.probe(str(tmp_path))
    [(relative, data)] = seen
    assert relative.startswith("primus-runner-probe-") and relative.endswith("/probe.txt") and data == PROBE_DATA
    assert os.listdir(tmp_path) == []
    (tmp_path / "a_file").write_text("")
    with pytest.raises(OSError):  # the store is not a directory: the caller turns it into one warning
        artifacts.probe(str(tmp_path / "a_file"))
