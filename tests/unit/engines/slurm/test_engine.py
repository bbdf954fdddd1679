"""The Slurm engine's submit side (runner.engines.slurm.engine): what it refuses before a file or ``sbatch``
exists, the request each node runs, the dry run, and what it says once the job is submitted. Slurm's
tools are the fake ones of tests/fake_slurm.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from fake_slurm import prints, tools
from plan_factory import plan_from_layer
from runner.engines.base import Launched, RunContext
from runner.engines.slurm import SlurmEngine
from runner.engines.slurm.engine import embedded_secrets, node_command
from runner.engines.slurm.flags import SlurmFlags
from runner.errors import ConfigError
from runner.options import LaunchFlags, RunOptions
from runner.secrets import Secret, secret_scope
from runner.ui import Output

CANARY = "engine-canary-8f9a0b"
LAYER = {"container": {"gpu": "none", "options": {"image": "primus-test/busybox:latest", "privileged": False, "ulimit": [],
                                                  "group-add": [], "env": ["HF_TOKEN", "LIT=one"]}}}


def _planned(layer=LAYER, host=None):
    config, planned = plan_from_layer(layer, ["python", "train.py"], host=host or {"HF_TOKEN": CANARY, "PATH": "/usr/bin"},
                                      flags=LaunchFlags(name="slurm-job"))
    return config, planned.require(), planned.scope


def _ctx(config, scope, slurm=SlurmFlags(nodes=2), out=None, **options):
    opts = RunOptions(command=("python", "train.py"), engine_flags=(("slurm", slurm),), **options)
    return RunContext(opts, scope, out or Output(color=False), SlurmEngine.settings(config, opts),
                      run=SimpleNamespace(id="r1", job_dir=None, node_cache=None))


@pytest.fixture
def slurm_tools(tmp_path, monkeypatch):
    """sbatch, srun and an scontrol whose ``show config`` is ``text`` (``slurm_tools(text)``)."""
    def install(config_text="KillWait = 45 sec\n"):
        return tools(tmp_path / "bin", monkeypatch, sbatch=prints("1\n"), srun=prints(""), scontrol=prints(config_text))
    return install


def test_the_cluster_config_is_read_once_for_its_kill_wait(work, slurm_tools):
    slurm_tools("AccountingStoreFlags = job_script\nKillWait = 45 sec\n")
    config, plan, scope = _planned()
    ctx = _ctx(config, scope)
    assert ctx.settings.kill_wait == 45 and ctx.settings.settings.nodes == 2 and not ctx.settings.allow_env_in_accounting


def test_a_secret_in_a_slurm_flag_is_refused_before_sbatch_sees_it(work, slurm_tools):
    slurm_tools()
    config, plan, scope = _planned()
    ctx = _ctx(config, scope, SlurmFlags(nodes=2, args=(f"--comment={CANARY}",)))
    with pytest.raises(ConfigError) as info:
        SlurmEngine().preflight(plan, ctx)
    [problem] = info.value.problems
    assert problem.message == "a Slurm flag holds a secret value: it would be on sbatch's command line (visible in ps)"
    assert info.value.exit_code == 2 and CANARY not in str(info.value)


def test_a_cluster_that_archives_job_environments_is_refused_unless_allowed(work, slurm_tools):
    slurm_tools("AccountingStoreFlags = job_env,job_script\n")
    config, plan, scope = _planned({**LAYER, "container": {**LAYER["container"], "pull": "never"}})
    with pytest.raises(ConfigError) as info:
        SlurmEngine().preflight(plan, _ctx(config, scope))
    assert [p.message for p in info.value.problems] == ["this cluster's accounting stores job environments "
                                                        "(AccountingStoreFlags=job_env,job_script): slurmdbd would archive the values of HF_TOKEN"]
    config, plan, scope = _planned({**LAYER, "container": {**LAYER["container"], "pull": "never"}, "slurm": {"allow_env_in_accounting": True}})
    SlurmEngine().preflight(plan, _ctx(config, scope))


def test_the_request_names_every_value_and_holds_none(work, slurm_tools):
    slurm_tools("KillWait = 7 sec\n")
    config, plan, scope = _planned()
    request = SlurmEngine().request(plan, _ctx(config, scope))
    assert {"PRIMUS_RUNNER_ENV_HF_TOKEN", "PRIMUS_RUNNER_ENV_LIT"} <= set(request.export)
    assert request.node_plan.job.stop_timeout == 4  # the container stops within Slurm's KillWait, with time to spare
    doc = json.loads(request.plan_file)
    assert doc["slurm"]["kill_wait"] == 7 and doc["slurm"]["nodes"] == 2
    assert CANARY not in request.script + request.plan_file + " ".join(request.node_command)
    assert request.agent_values == {}  # no registry login, no embedded secret: nothing for the agents alone


def test_the_dry_run_prints_the_request_without_a_value(work, slurm_tools, capsys):
    slurm_tools()
    config, plan, scope = _planned()
    engine = SlurmEngine()
    engine.dry_run(engine.request(plan, _ctx(config, scope)), _ctx(config, scope))
    out = capsys.readouterr().out
    assert "sbatch --parsable" in out and "#SBATCH --nodes=2" in out and CANARY not in out
    engine.dry_run(engine.request(plan, _ctx(config, scope)), _ctx(config, scope, out=Output(json_mode=True)))
    doc = json.loads(capsys.readouterr().out)
    assert CANARY not in json.dumps(doc)


def test_inside_an_allocation_a_submit_says_it_makes_a_new_job(work, slurm_tools, monkeypatch, capsys):
    slurm_tools()
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    config, plan, scope = _planned()
    request = SlurmEngine().request(plan, _ctx(config, scope))
    assert request.allocation == "77" and not request.as_step
    SlurmEngine().dry_run(request, _ctx(config, scope))
    assert "inside Slurm allocation 77 (SLURM_JOB_ID is set): this submits a new job" in capsys.readouterr().err


def test_a_detached_submit_prints_the_job_id_and_how_to_follow_it(work, slurm_tools, capsys):
    slurm_tools()
    config, plan, scope = _planned()
    request = SlurmEngine().request(plan, _ctx(config, scope))
    launched = Launched("4242", "slurm-job", {"request": request, "final": None})
    SlurmEngine().announce(launched, _ctx(config, scope), detached=True)
    captured = capsys.readouterr()
    assert captured.out == "4242\n"
    assert f"submitted job 4242 on 2 node(s); output: {request.job_dir / 'slurm-4242.out'}" in captured.err
    assert "follow it: primus-runner logs 4242 -f (status 4242); stop it: primus-runner cancel 4242" in captured.err
    assert SlurmEngine().finished(launched, _ctx(config, scope), 0) == {"job_id": "4242", "state": "unknown", "exit_code": 0}


def test_a_secret_inside_a_forwarded_value_travels_to_the_agents_for_masking(work):
    layer = {"container": {**LAYER["container"], "options": {**LAYER["container"]["options"], "env": ["MY_API_KEY"]}}}
    _, plan, _ = _planned(layer, host={"MY_API_KEY": f"Bearer {CANARY}", "PATH": "/usr/bin"})
    scope = secret_scope(extra=[("HF_TOKEN", Secret(CANARY)), ("MY_API_KEY", Secret(f"Bearer {CANARY}"))])
    assert [s.reveal() for s in embedded_secrets(plan, scope)] == [CANARY]
    assert embedded_secrets(plan, secret_scope(extra=[("MY_API_KEY", Secret(f"Bearer {CANARY}"))])) == []


@pytest.mark.parametrize("engine, kind", [("podman", "podman"), ("docker", "docker"), (None, "docker")])
def test_each_nodes_container_is_the_docker_request_with_placeholders(work, engine, kind):
    container = {**LAYER["container"], **({"engine": engine} if engine else {})}
    _, plan, _ = _planned({"container": container})
    argv = node_command(plan)
    assert argv[:4] == [kind, "run", "--name", "primus-<job>-<rank>"]
    assert "io.primus-runner.job=primus-<job>-<rank>" in argv and "io.primus-runner.slurm-job=<job>" in argv
    assert argv[-2:] == ["python", "train.py"] and CANARY not in " ".join(argv)


def test_ups_switches_the_slurm_engine_does_not_take_are_refused_with_exit_2(cli):
    rc, _, err = cli("up", "--engine", "slurm", "--keep", "-i", "--", "true")
    assert rc == 2 and err.startswith("error: the slurm engine does not take --keep, -i\n  fix: drop them, or launch with --engine docker")
    assert SlurmEngine.launch_options == ()
