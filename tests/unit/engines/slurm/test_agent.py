"""The node agent (runner.engines.slurm.agent): the plan file checked against the submitted digest, the plan rebuilt from
names and carried values, its two argument forms, and a node's run (a direct host process) with its exit file."""

from __future__ import annotations

import json

import pytest

from runner.engines.slurm import agent, node
from runner.engines.slurm.script import PLAN_DIGEST, PLAN_FORMAT
from runner.errors import ConfigError, UsageError
from runner.ui import Output


def test_the_node_refuses_a_swapped_plan_file(tmp_path, monkeypatch):
    submitted = json.dumps({"format": PLAN_FORMAT, "plan": {"image": "primus-test/busybox:latest"}}, indent=2)
    swapped = json.dumps({"format": PLAN_FORMAT, "job_dir": str(tmp_path), "slurm": {"nodes": 1, "master_port": 1, "gpus_per_node": 0},
                          "plan": {"image": "attacker/image:latest", "command": ["true"], "env": [], "name": "x"}}, indent=2)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(swapped)  # what another user put there while the job was queued
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv(PLAN_DIGEST, node.plan_digest(submitted))
    with pytest.raises(ConfigError) as info:
        agent.run_node(str(plan_file), Output())
    assert "not the one this job was submitted with" in str(info.value)


# ---------------------------------------------------------------- the plan on the node, and the node's run

CANARY = "agent-canary-3c4d5e"


def _document(work, command):
    """The plan file ``submit`` writes for ``command`` (HF_TOKEN a secret, LIT public), as a dict."""
    from plan_factory import plan_from_layer

    from runner.config import load_config
    from runner.engines.slurm.flags import SlurmFlags
    from runner.engines.slurm.script import plan_document
    from runner.engines.slurm.settings import settings_from
    from runner.options import LaunchFlags

    layer = {"container": {"gpu": "none", "options": {"image": "primus-test/busybox:latest", "env": ["HF_TOKEN", "LIT=one"]}}}
    _, planned = plan_from_layer(layer, command, host={"HF_TOKEN": CANARY, "PATH": "/usr/bin"}, flags=LaunchFlags(name="agent-job"))
    config = load_config(None, {**layer, "slurm": {"master_port": 2345}}, user_files=False)
    settings = settings_from(config, SlurmFlags(nodes=2))
    return json.loads(json.dumps(plan_document(planned.require(), settings, work / "job")))


def test_the_plan_takes_names_from_the_file_and_values_from_the_carried_environment(work):
    from runner.secrets import Secret

    doc = _document(work, ["true"])
    environ = {node.carried("HF_TOKEN"): CANARY, node.carried("LIT"): "one", "HF_TOKEN": "not-the-carried-one"}
    plan, scope, missing = agent.plan_from_document(doc, environ)
    values = {d.name: d.value for d in plan.job.forwarded}
    assert isinstance(values["HF_TOKEN"], Secret) and values["HF_TOKEN"].reveal() == CANARY and values["LIT"] == "one"
    assert missing == []
    assert scope.masker.mask(f"x {CANARY} y") == "x *** y"
    _, _, missing = agent.plan_from_document(doc, {node.carried("HF_TOKEN"): CANARY, "LIT": "one"})
    assert missing == ["LIT"]  # its own name is not the carried one: nothing configures the job on the way


def test_a_file_that_is_no_plan_file_is_refused(work):
    with pytest.raises(ConfigError, match=r"not a primus-runner Slurm plan file \(format 'other/1'\)"):
        agent.plan_from_document({"format": "other/1", "plan": {}}, {})


@pytest.mark.parametrize("argv, said", [
    (["node-agent"], "node-agent: unexpected arguments (none)"),
    (["node-agent", "--cleanup"], "node-agent: unexpected arguments --cleanup"),
    (["node-agent", "a.json", "b.json"], "node-agent: unexpected arguments a.json b.json"),
    (["node-agent", "--verbose"], "node-agent: unexpected arguments --verbose"),
])
def test_the_agent_takes_only_the_two_forms_the_batch_script_writes(capsys, argv, said):
    assert agent.main(argv) == 2
    assert said in capsys.readouterr().err


def test_cleanup_refuses_what_is_not_a_job_id(capsys):
    assert agent.main(["node-agent", "--cleanup", "12;x"]) == 2
    assert "'12;x' is not a Slurm job id" in capsys.readouterr().err


def test_the_agent_runs_only_inside_a_job_step(work, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with pytest.raises(UsageError, match="node-agent runs inside a Slurm job step"):
        agent.run_node(str(work / "plan.json"), Output())


def _node_env(monkeypatch, plan_file, text, rank="1", carried=True):
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_NODEID", rank)
    monkeypatch.setenv("SLURMD_NODENAME", "n7")
    monkeypatch.setenv("PRIMUS_MASTER_NODEADDR", "127.0.0.1")
    monkeypatch.setenv(PLAN_DIGEST, node.plan_digest(text))
    monkeypatch.setenv(node.carried("LIT"), "one")
    monkeypatch.setenv(node.carried("PATH"), "/usr/bin:/bin")
    if carried:
        monkeypatch.setenv(node.carried("HF_TOKEN"), CANARY)
    plan_file.write_text(text)


def test_a_direct_node_runs_the_job_with_its_computed_values_masked_and_writes_its_exit_file(work, monkeypatch, capfd):
    doc = _document(work, ["sh", "-c", 'echo "token=$HF_TOKEN rank=$NODE_RANK of $NNODES at $MASTER_ADDR:$MASTER_PORT lit=$LIT"; exit 3'])
    doc["entry"] = "direct"  # the launcher's `slurm … -- direct`: a host process, no engine to stand in for
    (work / "job").mkdir()
    _node_env(monkeypatch, work / "job" / "plan.json", json.dumps(doc, indent=2))
    assert agent.run_node(str(work / "job" / "plan.json"), Output(color=False)) == 3
    out, err = capfd.readouterr()
    assert "token=*** rank=1 of 2 at 127.0.0.1:2345 lit=one" in out and CANARY not in out + err
    exit_file = work / "job" / "exit-4242-1"
    assert exit_file.read_text() == "3\n" and exit_file.stat().st_mode & 0o777 == 0o600


def test_a_secret_that_did_not_reach_the_node_starts_nothing(work, monkeypatch):
    doc = _document(work, ["sh", "-c", "touch started"])
    doc["entry"] = "direct"
    (work / "job").mkdir()
    _node_env(monkeypatch, work / "job" / "plan.json", json.dumps(doc, indent=2), carried=False)
    with pytest.raises(ConfigError, match="these secrets did not reach node n7: HF_TOKEN"):
        agent.run_node(str(work / "job" / "plan.json"), Output())
    assert not (work / "started").exists() and not (work / "job" / "exit-4242-1").exists()
