"""The run store's shared set-up: ``begin(engine)`` is ``recorder.begin`` of one launch of ``true`` in
``tmp_path/project`` (TensorBoard on, writing /tmp/tb; no cache), with the state directory in
``tmp_path/state``: what an engine's facts decide about the run's directories, before anything runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


@pytest.fixture
def begin(tmp_path, monkeypatch):
    from runner.engines.base import RunContext
    from runner.options import LaunchFlags, RunOptions, Sources
    from runner.runs import recorder
    from runner.session.prepare import prepare
    from runner.ui import Output

    project = tmp_path / "project"
    project.mkdir()
    (project / "cfg.yaml").write_text("cache:\n  enabled: false\ntrackers:\n  disable_tensorboard: false\n  tensorboard_dir: /tmp/tb\n")
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin")

    def start(engine, *, detach: bool = False, dry_run: bool = False):
        """(the run, its options, the output) of a launch on ``engine`` (or its dry run), begun."""
        out = Output(color=False)
        opts = RunOptions(command=("true",), sources=Sources(str(project / "cfg.yaml"), None),
                          flags=LaunchFlags(gpu="none", image="img:1"), detach=detach, dry_run=dry_run)
        prepared = prepare(out, opts.sources, opts.command, opts.flags, gpu_mode="node")
        ctx = RunContext(opts, prepared.scope, out, None, lookup=prepared.lookup, dry_run=dry_run)
        return recorder.begin(opts, engine, prepared.plan, ctx, out, prepared.config), opts, out

    return start
