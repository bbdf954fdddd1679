"""The record's writes cost the launch no fsync: committed on the writer's thread, the WAL left for
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
run.started(Launched("cid", run.plan.name), Handshake(), detached=False)
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
