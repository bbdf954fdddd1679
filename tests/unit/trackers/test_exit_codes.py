"""One exit code per kind of failure (docs/cli.md lists them): a refused credential is 2
whoever refuses it; an unreachable server is 1."""

from __future__ import annotations

import pytest

from engine_fixtures import free_port
from runner.errors import CredentialRefused, EngineUnavailable
from runner.secrets import Masker
from runner.trackers import handshake as tracker_runs
from runner.ui import Output
from tracker_plans import planned_for


def test_mlflow_refusing_the_credentials_is_exit_2_like_a_registry(work, stand_in, canary):
    server = stand_in(401, {"error_code": "UNAUTHENTICATED", "message": "bad token"})
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": server.url, "MLFLOW_TRACKING_TOKEN": canary["MLFLOW_TRACKING_TOKEN"]})
    with pytest.raises(CredentialRefused) as info:
        tracker_runs.begin(planned.plan, Output(masker=Masker()))
    assert info.value.exit_code == 2 and "refused the credentials" in info.value.message


def test_an_unreachable_mlflow_server_is_exit_1(work):
    planned = planned_for(work, "  disable_mlflow: false\n", {"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{free_port()}"})
    with pytest.raises(EngineUnavailable) as info:
        tracker_runs.begin(planned.plan, Output(masker=Masker()))
    assert info.value.exit_code == 1
