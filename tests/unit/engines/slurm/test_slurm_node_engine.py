"""``container.engine`` travels to the Slurm nodes: it is decided in the plan, recorded in the
job's plan file, and each node agent (and ``cancel``'s cleanup) uses it instead of guessing."""

from __future__ import annotations

import json

import pytest

from plan_factory import plan_from_layer

from runner.engines.base import RunContext
from runner.engines.slurm import SlurmEngine
from runner.engines.slurm.agent import plan_from_document
from runner.engines.slurm.node import planned_engine
from runner.engines.slurm.script import plan_document
from runner.engines.slurm.flags import SlurmFlags
from runner.options import LaunchFlags, RunOptions
from runner.ui import Output


def _plan(engine: str | None):
    container = {"gpu": "none", "options": {"image": "primus-test/busybox:latest", "privileged": False, "ulimit": [], "group-add": []}}
    if engine:
        container["engine"] = engine
    config, planned = plan_from_layer({"container": container}, host={"PATH": "/usr/bin"}, flags=LaunchFlags(name="engine-job"))
    return config, planned.require(), planned.scope


@pytest.mark.parametrize("engine", ["podman", "docker", None])
def test_the_plan_file_carries_container_engine_to_the_node(work, engine):
    config, plan, scope = _plan(engine)
    assert plan.container.container_engine == (engine or "auto")
    ctx = RunContext(RunOptions(command=("true",)), scope, Output(), SlurmEngine.settings(config, RunOptions(command=("true",), engine_flags=(("slurm", SlurmFlags()),))))
    request = SlurmEngine().request(plan, ctx)
    doc = json.loads(json.dumps(plan_document(plan, request.settings, request.job_dir)))
    node_plan, _, _ = plan_from_document(doc, {"PATH": "/usr/bin"})
    assert node_plan.container.container_engine == (engine or "auto")
    plan_file = work / "plan.json"
    plan_file.write_text(json.dumps(doc))
    assert planned_engine(plan_file) == (engine or "auto")


def test_the_dry_run_shows_each_node_running_the_chosen_engine(work):
    config, plan, scope = _plan("podman")
    ctx = RunContext(RunOptions(command=("true",)), scope, Output(), SlurmEngine.settings(config, RunOptions(command=("true",))))
    assert list(SlurmEngine().request(plan, ctx).node_command)[:2] == ["podman", "run"]
