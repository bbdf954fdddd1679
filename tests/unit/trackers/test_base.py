"""The tracker plug-in protocol (runner.trackers.base): what a tracker's ``needs`` may forward (a declared
credential only when the secret policy masks it, warned about by name, never by value), the default
``needs``, the handshake's finish, and every registered tracker keeping the protocol's shape."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from engine_fixtures import assert_no_leak, make_canary
from runner.config import Config
from runner.trackers import TRACKERS, tracker
from runner.trackers.base import RECORDED_FIELDS, Analysis, Findings, Handshake, TrackerPlan, TrackerSettings, want_names

TOY = TrackerSettings(name="toy", label="Toy", names=("TOY_URL", "TOY_API_KEY", "TOY_PROJECT"), secrets=("TOY_API_KEY",),
                      secret_kind="a Toy API key")


def analysis(env: dict, config: dict | None = None, settings_env: dict | None = None) -> Analysis:
    return Analysis(TOY, "megatron", {}, env.get, Config(config or {}), settings_env or {}, Findings())


def test_a_credential_the_secret_policy_does_not_mask_is_never_forwarded_and_is_warned_about_by_name():
    value = make_canary()["WANDB_API_KEY"]
    a = analysis({"TOY_API_KEY": value})
    a.want("TOY_API_KEY", "tracker toy")
    assert a.found.wanted == []
    [warning] = a.found.warnings
    assert warning.startswith("TOY_API_KEY is set but not forwarded: it is a Toy API key") and "passthrough.secrets" in warning
    assert_no_leak(warning, [value], "the warning")
    unset = analysis({})
    unset.want("TOY_API_KEY", "tracker toy")
    assert unset.found.wanted == [] and unset.found.warnings == []  # nothing set: nothing to say


def test_a_masked_credential_and_any_other_name_are_forwarded_as_asked():
    a = analysis({"TOY_API_KEY": "k"}, {"passthrough": {"secrets": ["TOY_API_KEY"]}})
    a.want("TOY_API_KEY", "tracker toy")
    a.want("TOY_URL", "trackers.url", required=True)
    assert [(w.name, w.reason, w.required) for w in a.found.wanted] == [("TOY_API_KEY", "tracker toy", False),
                                                                        ("TOY_URL", "trackers.url", True)]
    assert a.found.warnings == []


def test_the_default_needs_forwards_every_declared_name_not_set_from_a_key():
    a = analysis({}, {"passthrough": {"secrets": ["TOY_API_KEY"]}}, settings_env={"TOY_PROJECT": "from-the-config"})
    want_names(a)
    assert [(w.name, w.reason) for w in a.found.wanted] == [("TOY_URL", "tracker toy"), ("TOY_API_KEY", "tracker toy")]


def test_a_handshake_finishes_through_its_finisher_once_each_call_and_without_one_does_nothing():
    Handshake().finish(0)  # no tracker took part
    seen = []
    hs = Handshake(_finish=lambda code, output: seen.append((code, output)))
    hs.finish(3, b"masked")
    hs.finish(0)
    assert seen == [(3, b"masked"), (0, b"")]
    assert Handshake().env == {} and Handshake().env is not Handshake().env  # each launch its own


def test_a_tracker_plan_says_which_trackers_are_on_and_records_what_a_node_needs():
    plan = TrackerPlan("megatron", ("mlflow",), {})
    assert plan.is_on("mlflow") and not plan.is_on("wandb")
    fields = {f.name for f in dataclasses.fields(TrackerPlan)}
    assert set(RECORDED_FIELDS) <= fields
    assert not {"problems", "warnings", "notices", "wanted"} & set(RECORDED_FIELDS)  # they stay on the submitting host


@pytest.mark.parametrize("name", sorted(TRACKERS))
def test_every_registered_tracker_keeps_the_protocol(name):
    module = tracker(name)
    assert module.NAME == name and module.SETTINGS.name == name and isinstance(module.SETTINGS, TrackerSettings)
    assert set(module.SETTINGS.secrets) <= set(module.SETTINGS.names)  # a credential is one of its names
    assert isinstance(module.RUN_ENV, tuple) and (module.SETTINGS.run_id is None or module.SETTINGS.run_id in module.RUN_ENV)
    for hook, params in (("prefetch", ["plan"]), ("check", ["plan", "timeout"]), ("begin", ["plan", "out", "hs"])):
        assert list(inspect.signature(getattr(module, hook)).parameters) == params, hook
