"""``runner.trackers.background``: the one background load of a third-party client (the MLflow
client, the S3 session), and the client's import failure as a launch sees it."""

from __future__ import annotations

import threading

import pytest

from runner.errors import EngineUnavailable
from runner.trackers.mlflow import client as mlflow_client
from runner.trackers.background import Background


def test_a_load_runs_once_in_its_own_thread_however_often_it_is_started_and_asked():
    calls, threads = [], []

    def load():
        calls.append(1)
        threads.append(threading.current_thread().name)
        return "client"

    loader = Background("toy-import", load)
    for _ in range(3):
        loader.start()
    assert [loader.get() for _ in range(3)] == ["client"] * 3
    assert calls == [1] and threads == ["primus-runner-toy-import"]


def test_a_failed_load_is_kept_and_raised_to_the_caller_only():
    def load():
        raise ModuleNotFoundError("No module named 'boto3'", name="boto3")

    loader = Background("broken", load)
    assert loader.wait() is None and isinstance(loader.error, ModuleNotFoundError)
    with pytest.raises(ModuleNotFoundError):
        loader.get()


def test_a_broken_mlflow_install_is_an_engine_error_naming_the_extra(monkeypatch):
    def load():
        raise ImportError("cannot import name 'MlflowClient'")

    monkeypatch.setattr(mlflow_client, "LOADER", Background("mlflow-import-broken", load))
    with pytest.raises(EngineUnavailable) as info:
        mlflow_client.client_class()
    assert "ImportError: cannot import name 'MlflowClient'" in info.value.message
    assert "primus-runner[mlflow]" in info.value.hint and info.value.exit_code == 1
