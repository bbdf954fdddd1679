"""A direct job's environment (runner/host_env.py): the user's, less the secrets the policy does not
forward and the runner's own settings, plus the forwarded names; the same rule in planning, in the
process engine on this host and on a Slurm node (ProcessRequest.of with the node's environment)."""

from __future__ import annotations

from runner.host_env import WITHHELD_RUNNER, WITHHELD_SECRET, host_environment
from runner.options import LaunchFlags

RULES = ("HF_TOKEN", "*_TOKEN", "*_PASSWORD", "!HF_HUB_DISABLE_IMPLICIT_TOKEN")
USER = {"PATH": "/venv/bin:/usr/bin", "HOME": "/home/u", "VIRTUAL_ENV": "/venv", "LD_LIBRARY_PATH": "/opt/rocm/lib",
        "ROCM_HOME": "/opt/rocm", "CONDA_PREFIX": "/conda", "LOADEDMODULES": "rocm/6", "HF_TOKEN": "hf-canary-value",
        "DB_PASSWORD": "pw-canary-value", "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1", "PRIMUS_RUNNER_CONFIG": "/c.yaml"}


def test_the_users_environment_less_secrets_and_the_runners_own():
    found = host_environment(USER, forwarded=set(), secret_rules=RULES)
    inherited = dict(found.inherited)
    for name in ("PATH", "HOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "ROCM_HOME", "CONDA_PREFIX", "LOADEDMODULES",
                 "HF_HUB_DISABLE_IMPLICIT_TOKEN"):
        assert inherited[name] == USER[name]
    assert {w.name: w.reason for w in found.withheld} == {
        "HF_TOKEN": WITHHELD_SECRET, "DB_PASSWORD": WITHHELD_SECRET, "PRIMUS_RUNNER_CONFIG": WITHHELD_RUNNER}
    assert "hf-canary-value" not in repr(found) and "pw-canary-value" not in repr(found)


def test_forwarded_names_are_the_plans_not_inherited():
    found = host_environment(USER, forwarded={"HF_TOKEN", "PATH"}, secret_rules=RULES)
    names = {n for n, _ in found.inherited} | {w.name for w in found.withheld}
    assert "HF_TOKEN" not in names and "PATH" not in names


def test_plan_of_a_host_process_inherits_and_lists_what_is_withheld(make_plan, canary):
    host = {**USER, "HF_TOKEN": canary["HF_TOKEN"], "WANDB_API_KEY": canary["WANDB_API_KEY"], "OTHER_TOKEN": "tok-canary-x1"}
    config = {"container": {"options": {"env": ["LIT=one"]}}}
    plan = make_plan(config, host=host, flags=LaunchFlags(host_process=True)).require()
    forwarded = {d.name: d for d in plan.job.forwarded}
    assert forwarded["PATH"].value == USER["PATH"] and forwarded["PATH"].reason == "inherited"
    assert forwarded["VIRTUAL_ENV"].value == "/venv" and forwarded["LIT"].value == "one"
    assert forwarded["HF_TOKEN"].secret  # allowlisted by the defaults: forwarded as a secret
    withheld = {d.name: d.skip_reason for d in plan.job.skipped if d.reason == "inherited"}
    assert withheld == {"OTHER_TOKEN": WITHHELD_SECRET, "DB_PASSWORD": WITHHELD_SECRET, "PRIMUS_RUNNER_CONFIG": WITHHELD_RUNNER}
    assert plan.job.inherit_env and "*_TOKEN" in plan.job.secret_rules
    assert "tok-canary-x1" not in repr(plan.to_dict())


def test_a_container_plan_inherits_nothing(make_plan):
    plan = make_plan({}, host=USER).require()
    assert not plan.job.inherit_env and {"VIRTUAL_ENV", "HOME", "PATH"}.isdisjoint(d.name for d in plan.job.env)


def test_clean_env_gives_only_the_forwarded_names(make_plan):
    plan = make_plan({"direct": {"clean_env": True}}, host=USER, flags=LaunchFlags(host_process=True)).require()
    assert not plan.job.inherit_env and "VIRTUAL_ENV" not in {d.name for d in plan.job.env}


def test_the_deny_list_is_a_containers_rule(make_plan):
    """`--env PATH` is refused for a container (the image has its own) and accepted for a host process."""
    refused = make_plan({}, host=USER, flags=LaunchFlags(env=("PATH", "LD_LIBRARY_PATH")))
    assert any("deny list" in p.message for p in refused.problems)
    planned = make_plan({}, host=USER, flags=LaunchFlags(env=("PATH", "LD_LIBRARY_PATH"), host_process=True))
    assert not planned.problems and planned.require().job.public_env()["LD_LIBRARY_PATH"] == "/opt/rocm/lib"


def test_a_public_value_holding_a_secret_is_inherited_as_a_secret(make_plan, canary):
    host = {**USER, "HF_TOKEN": canary["HF_TOKEN"], "AUTH_HEADER": f"Bearer {canary['HF_TOKEN']}"}
    plan = make_plan({}, host=host, flags=LaunchFlags(host_process=True)).require()
    (auth,) = [d for d in plan.job.forwarded if d.name == "AUTH_HEADER"]
    assert auth.secret and "AUTH_HEADER" not in plan.job.public_env()


def test_a_slurm_node_gets_its_own_environment_by_the_same_rule(make_plan, canary):
    """The node agent's ProcessRequest: the plan's names, the node's SLURM_* and the like, never the
    agent's masks, the runner's settings or a secret the plan does not forward."""
    from runner.engines.process import ProcessRequest

    plan = make_plan({}, command=("torchrun",), host=USER, flags=LaunchFlags(host_process=True)).require()
    node = {**USER, "SLURM_JOB_ID": "7", "SLURM_PROCID": "1", "PRIMUS_RUNNER_MASK_0": canary["WANDB_API_KEY"],
            "PRIMUS_RUNNER_PLAN_SHA256": "ab", "NODE_ONLY_TOKEN": canary["DATABRICKS_TOKEN"]}
    request = ProcessRequest.of(plan.job, node, cwd="/w")
    env = request.environment()
    assert env["SLURM_JOB_ID"] == "7" and env["VIRTUAL_ENV"] == "/venv" and env["PATH"] == USER["PATH"]
    assert not {"PRIMUS_RUNNER_MASK_0", "PRIMUS_RUNNER_PLAN_SHA256", "NODE_ONLY_TOKEN", "DB_PASSWORD"} & set(env)
    shown = repr(request.to_dict()) + request.render()
    assert canary["WANDB_API_KEY"] not in shown and canary["DATABRICKS_TOKEN"] not in shown
    assert "NODE_ONLY_TOKEN" in request.render()  # withheld, by name


def test_a_clean_process_request_has_the_default_path(make_plan):
    from runner.engines.process import DEFAULT_PATH, ProcessRequest

    plan = make_plan({"direct": {"clean_env": True}}, host=USER, flags=LaunchFlags(host_process=True)).require()
    env = ProcessRequest.of(plan.job, USER, cwd="/w").environment()
    assert env["PATH"] == DEFAULT_PATH and "HOME" not in env
