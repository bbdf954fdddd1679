"""One run's record: states from exit codes, durations as people read them, masked once more, shown with absolute paths."""

from __future__ import annotations

import json

import pytest

from runner.runs import record
from runner.secrets import Secret, secret_scope
from secret_ref_helpers import canary


@pytest.mark.parametrize("code, state", [(0, "succeeded"), (1, "failed"), (137, "failed"), (130, "interrupted"),
                                         (143, "interrupted"), (None, "unknown")])
def test_the_state_follows_the_exit_code(code, state):
    assert record.state_for(code) == state


@pytest.mark.parametrize("seconds, text", [(-1, "0.0 s"), (4.25, "4.2 s"), (59.9, "59.9 s"), (60, "1:00"),
                                           (3599, "59:59"), (3600, "1:00:00"), (90061, "25:01:01")])
def test_a_duration_reads_as_seconds_minutes_or_hours(seconds, text):
    assert record.duration_text(seconds) == text


def test_finish_sets_code_end_and_state_and_an_explicit_state_wins():
    rec = {"state": "running"}
    record.finish(rec, 0, 0.0)
    assert rec == {"state": "succeeded", "exit_code": 0, "ended_ts": 0.0, "ended": "1970-01-01T00:00:00+00:00"}
    record.finish(rec, None, 1.0, "interrupted")
    assert rec["state"] == "interrupted" and rec["exit_code"] is None
    assert record.iso(None) is None


def test_masked_puts_every_value_in_scope_out_and_a_secret_refuses_to_serialise():
    value = canary("record")
    masker = secret_scope(extra=[("HF_TOKEN", value)]).masker
    rec = {"id": "r", "command": ["train", f"--token={value}"], "cwd": f"/home/{value}"}
    masked = record.masked(rec, masker)
    assert value not in json.dumps(masked) and masked["command"] == ["train", "--token=***"]
    assert record.masked(rec, None) is rec
    with pytest.raises(TypeError):
        record.masked({"env": Secret(value)}, masker)


def test_public_leaves_internal_stamps_out_and_makes_paths_absolute(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    rec = {"id": "r", "started_ts": 1.0, "ended_ts": 2.0, "pid_start": "9", "run_dir": "runs/r", "log": "runs/r/output.log",
           "job_dir": None}
    assert record.public(rec) == {"id": "r", "run_dir": f"{tmp_path}/primus-runner/runs/r",
                                  "log": f"{tmp_path}/primus-runner/runs/r/output.log", "job_dir": None}
