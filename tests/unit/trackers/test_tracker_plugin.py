"""A new tracker is one module and one registry line: a toy tracker, plugged in through
``TRACKERS`` only, is validated (schema, did-you-mean, file:line), planned, its variables
forwarded (a credential as a secret), its endpoint guarded by the trust check, and its
handshake run."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from plan_factory import plan_from

import runner.resources
from runner.config import load_config
from runner.config import trust, untrusted
from runner.errors import ConfigError
from runner.plan import LaunchFlags
from runner.secrets import Secret
from runner.trackers import TRACKERS, handshake as runs, schema

CANARY = "canary-toy-tracker-4b1d9e"

# The whole plug-in: nothing else in the runner names it.
TOY = textwrap.dedent('''
    from runner.trackers.base import TrackerSettings

    NAME = "toy"
    RUN_ENV = ("TOY_RUN_ID",)
    SETTINGS = TrackerSettings(
        name=NAME,
        label="Toy",
        keys={"disable_toy": {"type": "boolean"}, "toy_project": {"type": ["string", "null"]},
              "toy_server": {"type": ["string", "null"]}},
        switch={"megatron": "disable_toy"},
        setting_env={"megatron": {"toy_project": "TOY_PROJECT", "toy_server": "TOY_URL"}},
        names=("TOY_API_KEY", "TOY_URL", "TOY_PROJECT"),
        secrets=("TOY_API_KEY",),
        endpoints=("TOY_URL",),
    )


    def prefetch(plan):
        pass


    def check(plan, timeout):
        return {"tracker": NAME, "status": "skipped", "detail": "toy"}


    def begin(plan, out, hs):
        hs.env["TOY_RUN_ID"] = "toy-" + plan.job.name
        hs.links[NAME] = "toy://" + plan.job.trackers.settings["toy_project"]
        return None
''')


@pytest.fixture
def toy(work, tmp_path_factory, monkeypatch):
    """The toy module on the path, its registry line, and the schema as the registry generates it
    (the shipped policies copied, ``python -m runner.trackers.schema --write`` run on the copy)."""
    plugin = tmp_path_factory.mktemp("plugin")
    (plugin / "toy_tracker_plugin.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(plugin))
    monkeypatch.setitem(TRACKERS, "toy", "toy_tracker_plugin")
    policies = tmp_path_factory.mktemp("shipped") / "policies"
    shutil.copytree(runner.resources.policies_dir(), policies)
    real_find = runner.resources._find
    monkeypatch.setattr(runner.resources, "_find", lambda name: policies if name == "policies" else real_find(name))
    assert schema.main(["--write"]) == 0
    untrusted.endpoint_names.cache_clear()
    untrusted._schema.cache_clear()
    yield work
    untrusted.endpoint_names.cache_clear()
    untrusted._schema.cache_clear()


def _plan(work, trackers: str, host: dict):
    return plan_from(work, "container:\n  options:\n    image: busybox\ntrackers:\n" + trackers, host=host,
                     flags=LaunchFlags(gpu="none"), name="job-1")


def test_an_unknown_key_of_the_toy_gets_a_did_you_mean_with_its_line(toy):
    (toy / ".primus.yaml").write_text("trackers:\n  disable_toy: false\n  toy_projct: demo\n")
    with pytest.raises(ConfigError) as info:
        load_config()
    [problem] = info.value.problems
    assert "unknown key 'toy_projct' in trackers" in str(problem)
    assert "did you mean 'toy_project'?" in str(problem)
    assert problem.where == f"{toy / '.primus.yaml'}:3"


def test_a_wrong_type_for_a_toy_key_is_refused(toy):
    (toy / ".primus.yaml").write_text("trackers:\n  disable_toy: sometimes\n")
    with pytest.raises(ConfigError) as info:
        load_config()
    assert "trackers.disable_toy: expected true/false" in str(info.value.problems[0])


def test_the_toy_is_planned_and_its_variables_forwarded(toy):
    planned = _plan(toy, "  disable_toy: false\n  toy_project: demo\n",
                    {"TOY_API_KEY": CANARY, "TOY_URL": "https://toy.example", "TOY_PROJECT": "from-host"})
    assert not planned.problems, planned.problems
    plan = planned.plan
    assert plan.job.trackers.enabled == ("toy",)
    env = {d.name: d for d in plan.job.forwarded}
    assert env["TOY_PROJECT"].value == "demo" and env["TOY_PROJECT"].reason == "trackers.toy_project"  # the key beats the host
    assert env["TOY_URL"].value == "https://toy.example" and not env["TOY_URL"].secret
    assert env["TOY_API_KEY"].secret and isinstance(env["TOY_API_KEY"].value, Secret)
    assert CANARY not in repr(plan.to_dict())
    assert "--toy_project=demo" not in plan.job.command  # overrides only for a Primus training command


def test_the_toy_is_off_unless_switched_on_and_then_forwards_nothing(toy):
    planned = _plan(toy, "  toy_project: demo\n", {"TOY_API_KEY": CANARY, "TOY_URL": "https://toy.example"})
    assert planned.plan.job.trackers.enabled == ()
    assert not any(d.name.startswith("TOY_") for d in planned.plan.job.forwarded)


def test_a_toy_credential_the_policy_does_not_mask_is_not_forwarded(toy):
    planned = _plan(toy, "  disable_toy: false\npassthrough:\n  secrets: [\"!TOY_API_KEY\"]\n", {"TOY_API_KEY": CANARY})
    assert "TOY_API_KEY" not in {d.name for d in planned.plan.job.forwarded}
    assert any("TOY_API_KEY is set but not forwarded" in w for w in planned.warnings)


def test_an_untrusted_project_file_may_not_point_the_toy_elsewhere(toy):
    problems = trust.untrusted_problems({"container": {"options": {"env": ["TOY_URL=https://attacker.example"]}}},
                                        toy / ".primus.yaml", lambda path: f"{toy / '.primus.yaml'}:4")
    assert any("sets TOY_URL, which says where or how a credential from your environment is sent" in str(p) for p in problems)


def test_an_untrusted_project_file_may_not_point_the_toy_elsewhere_through_its_key(toy):
    """``trackers.toy_server`` becomes ``TOY_URL`` in the job: the schema marks the key, the trust check asks."""
    problems = trust.untrusted_problems({"trackers": {"toy_server": "https://attacker.example", "toy_project": "demo"}},
                                        toy / ".primus.yaml", lambda path: f"{toy / '.primus.yaml'}:2")
    assert [p.message.split(" in the untrusted")[0] for p in problems] == ["trackers.toy_server"], problems


def test_the_toy_handshake_runs_through_the_registry(toy):
    from runner.ui import Output

    plan = _plan(toy, "  disable_toy: false\n  toy_project: demo\n", {}).require()
    assert runs.run_env_names(plan) == ("TOY_RUN_ID",)
    handshake = runs.begin(plan, Output())
    assert handshake.env == {"TOY_RUN_ID": "toy-job-1"} and handshake.links == {"toy": "toy://demo"}


@pytest.mark.parametrize("mode", ["offline", "online"])
def test_a_runs_record_gives_each_trackers_after_line_what_the_plan_gave(tmp_path, mode):
    """``runs show`` says what each output holds from the record alone, as the launch said it from the plan."""
    from runner.launch_plan import ContainerSpec, JobSpec, LaunchPlan
    from runner.trackers import TRACKERS, as_recorded, recorded, settings
    from runner.trackers.config import TrackerPlan

    plan = LaunchPlan(JobSpec(command=("true",), name="job", gpu="none", env=(),
                              trackers=TrackerPlan("megatron", tuple(TRACKERS), {}, wandb_mode=mode)), ContainerSpec(image="img:1"))
    (tmp_path / "wandb" / "offline-run-20261203_101010-abc123").mkdir(parents=True)
    kept = as_recorded(recorded(plan))
    for name in TRACKERS:
        after = settings(name).after_line
        assert after(tmp_path, kept, "abc123") == after(tmp_path, plan, "abc123"), name
