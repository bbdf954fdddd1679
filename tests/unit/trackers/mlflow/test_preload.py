"""What the MLflow handshake prepares beside the preflight: the run's tags (facts and names, never a
value) and the experiment looked up early, used once, for the same store only."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from loopback_servers import Server, json_answer
from runner.secrets import Secret
from runner.trackers.httpapi import HTTPFailure
from runner.trackers.mlflow import preload

CANARY = "preload-canary-4f1e0b7a"
EXPERIMENT = {"experiment": {"experiment_id": "3", "lifecycle_stage": "active", "artifact_location": "mlflow-artifacts:/3"}}


def plan(uri="http://127.0.0.1:9", name="exp"):
    public = {"MLFLOW_TRACKING_URI": uri, "MLFLOW_EXPERIMENT_NAME": name}
    forwarded = [SimpleNamespace(name="HF_TOKEN", value=Secret(CANARY)), SimpleNamespace(name="A_PUBLIC", value="v")]
    trackers = SimpleNamespace(framework="megatron", config_hash="abc123", is_on=lambda t: t == "mlflow")
    job = SimpleNamespace(name="job-1", trackers=trackers, forwarded=forwarded, public_env=lambda: public, secret_env=lambda: {})
    return SimpleNamespace(job=job, container=SimpleNamespace(image="img:1", mounts=[]))


def test_the_tags_are_facts_and_names_never_values():
    tags = preload.run_tags(plan(), {"primus-runner.git_commit": "c0ffee"})
    assert tags["primus-runner.job"] == "job-1" and tags["primus-runner.image"] == "img:1"
    assert tags["primus-runner.framework"] == "megatron" and tags["primus-runner.config_hash"] == "abc123"
    assert tags["primus-runner.forwarded_env"] == "A_PUBLIC,HF_TOKEN" and tags["mlflow.source.name"] == "primus-runner"
    assert tags["primus-runner.git_commit"] == "c0ffee"
    assert all(CANARY not in k and CANARY not in v for k, v in tags.items())


def test_the_git_facts_of_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "primus-runner.git_commit" not in preload.run_tags(plan())  # not a repository: no git tags
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "f").write_text("1")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    tags = preload.run_tags(plan())
    assert tags["primus-runner.git_commit"] == tags["mlflow.source.git.commit"] == head
    assert tags["primus-runner.git_dirty"] == "false"
    (tmp_path / "f").write_text("2")
    assert preload.run_tags(plan())["primus-runner.git_dirty"] == "true"


def test_the_early_lookup_is_used_once_for_the_same_store():
    with Server(json_answer(200, EXPERIMENT)) as server:
        p = plan(server.url)
        early = preload.Early()
        early.start(p)
        early.start(p)  # the same store: no second lookup
        api = SimpleNamespace(experiment=lambda name: pytest.fail("looked up again"))
        found = early.experiment(p, api, "exp")
        assert (found.id, found.location) == ("3", "mlflow-artifacts:/3")
        assert len(server.requests) == 1
        again = SimpleNamespace(experiment=lambda name: ("asked", name))
        assert early.experiment(p, again, "exp") == ("asked", "exp")  # after a lost create race: asked anew
        assert early.experiment(plan(server.url, name="other"), again, "other") == ("asked", "other")


def test_an_early_failure_is_raised_to_the_handshake():
    with Server(json_answer(500, {"error_code": "INTERNAL_ERROR", "message": "db down"})) as server:
        p = plan(server.url)
        early = preload.Early()
        early.start(p)
        with pytest.raises(HTTPFailure, match="db down"):
            early.experiment(p, None, "exp")


def test_prefetch_does_nothing_when_mlflow_is_off(monkeypatch):
    p = plan()
    p.job.trackers.is_on = lambda t: False
    monkeypatch.setattr(preload, "EARLY", SimpleNamespace(start=lambda plan: pytest.fail("started")))
    preload.prefetch(p)
