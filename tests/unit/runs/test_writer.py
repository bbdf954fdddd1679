"""The record's writes, masked and off the launch's thread; they cost the launch no fsync: committed on the writer's thread, the WAL left for
a later checkpoint instead of the two fsyncs of a checkpoint at exit (counted as the WAL kept)."""

from __future__ import annotations

import os
import subprocess
import sys

from runner.runs.store import Store

_LAUNCH = r"""
import sys
from runner.options import RunOptions, Sources, LaunchFlags
from runner.session.prepare import prepare
from runner.engines.base import RunContext, Launched
from runner.ui import Output
out = Output(color=False)
opts = RunOptions(command=("true",), sources=Sources(sys.argv[1], None), flags=LaunchFlags(gpu="none", image="busybox:test"))
prepared = prepare(out, opts.sources, opts.command, opts.flags)
ctx = RunContext(opts, prepared.scope, out, None, lookup=prepared.lookup)
from runner.engines.base import EngineBase
class Engine(EngineBase): name = "docker"
class Handshake: env, links = {}, {}
from runner.runs import recorder
run = recorder.begin(opts, Engine(), prepared.plan, ctx, out, prepared.config)
run.started(Launched("cid", run.plan.job.name), Handshake(), detached=False)
run.end(int(sys.argv[2]))
"""


def _launch(tmp_path, code: int) -> subprocess.CompletedProcess:
    config = tmp_path / "cfg.yaml"
    config.write_text("cache:\n  enabled: false\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "WANDB_", "MLFLOW_"))}
    env.update(HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"), NO_COLOR="1")
    return subprocess.run([sys.executable, "-c", _LAUNCH, str(config), str(code)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_launch_commits_its_record_and_leaves_the_checkpoint_to_later(tmp_path):
    for code in (0, 3):
        done = _launch(tmp_path, code)
        assert done.returncode == 0 and "not recorded" not in done.stderr, done.stderr
        wal = tmp_path / "state" / "primus-runner" / "runs.db-wal"
        # Closing the last connection would have checkpointed the WAL into the store (an fsync of each) and removed it.
        assert wal.exists() and wal.stat().st_size > 0
    rows = Store.open(tmp_path / "state" / "primus-runner" / "runs.db", create=False).list()
    assert sorted((r["state"], r["exit_code"]) for r in rows) == [("failed", 3), ("succeeded", 0)]
    assert all(r["job_id"] == "cid" for r in rows)  # the started write, then the end, in order


def _writer(monkeypatch, tmp_path, masker=None):
    from runner.runs.writer import Writer

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    warnings: list = []
    return Writer(warnings.append, masker), warnings


def test_a_write_is_masked_filled_and_committed_by_flush(monkeypatch, tmp_path):
    import json

    from runner.secrets import secret_scope
    from secret_ref_helpers import canary

    value = canary("writer")
    writer, warnings = _writer(monkeypatch, tmp_path, secret_scope(extra=[("HF_TOKEN", value)]).masker)
    writer.fill["image_digest"] = "sha256:abc"
    writer.put(json.dumps({"id": "r1", "started_ts": 1.0, "command": ["train", value], "image_digest": None}))
    writer.flush()
    assert writer.stored and warnings == []
    rec = Store.open(tmp_path / "state" / "primus-runner" / "runs.db", create=False).get("r1")
    assert rec["command"] == ["train", "***"] and rec["image_digest"] == "sha256:abc"
    assert value not in (tmp_path / "state" / "primus-runner" / "runs.db-wal").read_bytes().decode("latin-1")


def test_a_store_that_cannot_be_opened_is_one_warning_and_nothing_more_is_tried(monkeypatch, tmp_path):
    (tmp_path / "state").write_text("a file where the state directory should be")
    writer, warnings = _writer(monkeypatch, tmp_path)
    writer.put('{"id": "r1"}')
    writer.put('{"id": "r1", "state": "succeeded"}')
    writer.flush()
    assert not writer.stored and len(warnings) == 1 and "cannot be used" in warnings[0].message
