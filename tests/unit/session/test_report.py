"""``--report FILE``: schema-valid, atomic, mode 0600, and free of every secret value."""

from __future__ import annotations

import json
import os
import stat
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

from engine_fixtures import common_forms

from runner.session import report
from runner.errors import RuntimeFailure, UsageError

CANARY = f"canary-report-{uuid.uuid4().hex[:12]}"
SCHEMA = Path(__file__).resolve().parents[3] / "policies" / "report.schema.json"


def validate(doc: dict) -> None:
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(doc)


@pytest.fixture
def planned(make_plan):
    host = {"HF_TOKEN": CANARY, "COPY_OF_VALUE": f"Bearer {CANARY}", "PLAIN": "visible"}  # a non-secret name carrying the value
    return make_plan("container:\n  options:\n    image: primus-test/busybox:latest\n    env: [HF_TOKEN, COPY_OF_VALUE, PLAIN]\n",
                     ["echo", "hi"], host=host, flags=["--gpu", "none"])


def write(path, planned, **kw):
    from runner.secrets import Masker

    args = dict(
        plan=planned.require(), started=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc).timestamp(), ended=time.time(),
        exit_code=0, links={"mlflow": f"http://ci:{CANARY}@127.0.0.1:5000/#/experiments/1/runs/r1"},
        leaks=[], masker=planned.scope.masker, backend="docker",
    )
    args.update(kw)
    report.write_report(path, **args)


def test_report_validates_and_holds_no_secret_value(tmp_path, planned):
    path = tmp_path / "report.json"
    write(path, planned)
    text = path.read_text()
    for form in common_forms(CANARY):
        assert form not in text, "a canary form leaked into the report"
    doc = json.loads(text)
    validate(doc)
    assert doc["plan"]["env"]["HF_TOKEN"] == "***"
    assert doc["plan"]["env"]["PLAIN"] == "visible"
    assert sorted(doc["plan"]["secrets"]) == ["COPY_OF_VALUE", "HF_TOKEN"]  # a public name carrying a secret travels as one
    assert doc["exit_code"] == 0 and doc["status"] == "succeeded"
    assert doc["started"] == "2026-01-02T03:04:05.000+00:00"
    assert doc["trackers"]["links"]["mlflow"] == "http://127.0.0.1:5000/#/experiments/1/runs/r1"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_report_carries_audit_leaks_and_run_ids(tmp_path, planned):
    from runner.commands.audit import Finding

    plan = planned.require().with_env({"MLFLOW_RUN_ID": "abc123"}, "tracker mlflow")
    path = tmp_path / "report.json"
    write(path, planned, plan=plan, exit_code=4, leaks=[Finding("HF_TOKEN", "container primus-1: Config.Env")])
    doc = json.loads(path.read_text())
    validate(doc)
    assert doc["leaks"] == [{"secret": "HF_TOKEN", "location": "container primus-1: Config.Env"}]
    assert doc["leak_found"] is True and doc["status"] == "failed"
    assert doc["trackers"]["run_ids"] == {"mlflow": "abc123"}


def test_report_replaces_atomically_with_mode_0600(tmp_path, planned):
    path = tmp_path / "report.json"
    path.write_text("old")
    path.chmod(0o644)
    write(path, planned, exit_code=7)
    assert json.loads(path.read_text())["exit_code"] == 7
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [n for n in os.listdir(tmp_path) if "report" in n] == ["report.json"]  # no temp file left


def test_unwritable_report_is_a_runtime_failure_without_partial_file(tmp_path, planned):
    with pytest.raises(RuntimeFailure):
        write(tmp_path / "missing" / "report.json", planned)
    assert not (tmp_path / "missing").exists()


def test_check_path_refuses_before_launch(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        report.check_path(str(tmp_path / "nope" / "r.json"))
    with pytest.raises(UsageError, match="is a directory"):
        report.check_path(str(tmp_path))
    report.check_path(str(tmp_path / "r.json"))
    report.check_path("r.json")


def test_schema_rejects_a_report_without_exit_code(planned):
    import jsonschema

    doc = report.build_report(plan=planned.require(), started=None, ended=None, exit_code=1)
    validate(doc)
    del doc["exit_code"]
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)
