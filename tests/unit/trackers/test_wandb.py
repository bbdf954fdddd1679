"""W&B as a tracker: the API key checked against the viewer query (only in the Authorization header),
offline modes contacting nothing, and the run id chosen before launch so every rank logs to one run."""

from __future__ import annotations

import base64
import json

import pytest

from engine_fixtures import assert_no_leak
from tracker_plans import planned_for

from runner.secrets import Masker
from runner.trackers import handshake as tracker_runs
from runner.trackers import wandb
from runner.ui import Output


def test_wandb_key_verified_against_viewer_query(work, stand_in, canary):
    server = stand_in(200, {"data": {"viewer": {"id": "u1", "username": "bob", "entity": "team-bob"}}})
    host = {"WANDB_API_KEY": canary["WANDB_API_KEY"], "WANDB_BASE_URL": server.url}
    planned = planned_for(work, "  disable_wandb: false\n", host)
    [result] = tracker_runs.online_check(planned.plan, timeout=5)
    assert result == {"tracker": "wandb", "status": "reachable", "detail": f"{server.url} accepted WANDB_API_KEY (entity team-bob)"}
    [request] = server.requests
    assert request["method"] == "POST" and request["path"] == "/graphql" and b"viewer" in request["body"]
    assert request["headers"]["Authorization"] == "Basic " + base64.b64encode(f"api:{canary['WANDB_API_KEY']}".encode()).decode()
    assert_no_leak(request["body"], canary, "the GraphQL body")


@pytest.mark.parametrize("status,body", [(401, {"errors": [{"message": "unauthorized"}]}), (200, {"data": {"viewer": None}})])
def test_wandb_wrong_key_is_unauthorised(work, stand_in, canary, status, body):
    server = stand_in(status, body)
    planned = planned_for(work, "  disable_wandb: false\n", {"WANDB_API_KEY": canary["WANDB_API_KEY"], "WANDB_BASE_URL": server.url})
    [result] = tracker_runs.online_check(planned.plan, timeout=5)
    assert result["status"] == "unauthorised"
    assert_no_leak(json.dumps(result), canary, "the check result")


def test_wandb_run_id_is_pre_assigned_and_printed(work, capsys):
    planned = planned_for(
        work, "  disable_wandb: false\n  wandb_project: proj\n  wandb_save_dir: /out\n", {"WANDB_MODE": "offline"}
    )
    out = Output(masker=Masker())
    hs = tracker_runs.begin(planned.plan, out)
    run_id = hs.env["WANDB_RUN_ID"]
    assert len(run_id) == 8 and run_id.isalnum() and run_id.islower()
    assert hs.links["wandb"] == f"/out/wandb/offline-run-*-{run_id}"
    assert run_id in capsys.readouterr().err
    assert tracker_runs.begin(planned.plan, out).env["WANDB_RUN_ID"] != run_id  # fresh per launch
    hs.finish(0, b"")  # no W&B finisher: a no-op


def test_host_wandb_run_id_is_kept_for_resume(work):
    planned = planned_for(work, "  disable_wandb: false\n", {"WANDB_MODE": "offline", "WANDB_RUN_ID": "resume12"})
    hs = tracker_runs.begin(planned.plan, Output(masker=Masker()))
    assert hs.env["WANDB_RUN_ID"] == "resume12"


@pytest.mark.parametrize("mode", ["offline", "disabled", "dryrun"])
def test_an_offline_mode_contacts_nothing(work, stand_in, mode):
    server = stand_in(200, {})
    planned = planned_for(work, "  disable_wandb: false\n", {"WANDB_MODE": mode, "WANDB_BASE_URL": server.url})
    assert wandb.check(planned.plan, 5) == {"tracker": "wandb", "status": "skipped",
                                            "detail": f"WANDB_MODE={mode}: the job does not contact W&B"}
    assert server.requests == []


def test_an_online_run_is_linked_on_wandb_ai_with_its_entity(work, canary, capsys):
    host = {"WANDB_API_KEY": canary["WANDB_API_KEY"], "WANDB_ENTITY": "team", "WANDB_PROJECT": "proj", "WANDB_RUN_ID": "abc12345"}
    hs = tracker_runs.begin(planned_for(work, "  disable_wandb: false\n", host).plan, Output(masker=Masker()))
    assert hs.links["wandb"] == "team/proj/runs/abc12345"
    err = capsys.readouterr().err
    assert "W&B run: https://wandb.ai/team/proj/runs/abc12345" in err
    assert_no_leak(err, canary, "the handshake's output")


def test_run_ids_have_wandbs_shape():
    ids = {wandb.new_wandb_run_id() for _ in range(50)}
    assert len(ids) == 50 and all(len(i) == 8 and i.isalnum() and i == i.lower() for i in ids)
