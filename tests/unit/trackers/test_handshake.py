"""A launch's trackers together (``runner.trackers.handshake``): every enabled tracker's online check at
once, in registry order; its run variables reserved by name; its runs begun and, after the job, each
finisher given the exit code and the masked output."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from runner.errors import CredentialRefused
from runner.secrets import Masker
from runner.trackers import TRACKERS, handshake, tracker
from runner.ui import Output
from tracker_plans import planned_for


def fake(name, run_env=(), finisher=None, barrier=None, calls=None):
    def check(plan, timeout):
        if barrier is not None:
            barrier.wait()  # every check waits for the others: they run side by side or not at all
        return {"tracker": name, "status": "skipped", "detail": f"timeout {timeout}"}

    def begin(plan, out, hs):
        hs.env[f"{name.upper()}_RUN_ID"] = "r"
        return finisher

    return SimpleNamespace(NAME=name, RUN_ENV=run_env, check=check, begin=begin,
                           prefetch=lambda plan: calls.append(name) if calls is not None else None)


@pytest.fixture
def trackers(monkeypatch):
    def use(*modules):
        monkeypatch.setattr(handshake, "enabled", lambda plan: list(modules))
    return use


def test_the_online_checks_run_side_by_side_in_registry_order(trackers):
    barrier = threading.Barrier(3, timeout=10)
    trackers(fake("a", barrier=barrier), fake("b", barrier=barrier), fake("c", barrier=barrier))
    results = handshake.online_check(object(), timeout=3)
    assert [r["tracker"] for r in results] == ["a", "b", "c"] and results[0]["detail"] == "timeout 3"


def test_no_tracker_no_check(trackers):
    trackers()
    assert handshake.online_check(object()) == []


def test_the_run_variables_are_every_enabled_trackers(trackers):
    trackers(fake("a", ("A_RUN_ID",)), fake("b", ("B_RUN_ID", "B_EXPERIMENT")))
    assert handshake.run_env_names(object()) == ("A_RUN_ID", "B_RUN_ID", "B_EXPERIMENT")


def test_each_finisher_gets_the_end_of_the_job_in_order(trackers):
    ended = []
    trackers(fake("a", finisher=lambda code, out: ended.append(("a", code, out))), fake("b"),
             fake("c", finisher=lambda code, out: ended.append(("c", code, out))))
    hs = handshake.begin(object(), out=None)
    assert hs.env == {"A_RUN_ID": "r", "B_RUN_ID": "r", "C_RUN_ID": "r"}
    hs.finish(3, b"masked")
    assert ended == [("a", 3, b"masked"), ("c", 3, b"masked")]


def test_without_a_finisher_the_end_is_a_no_op(trackers):
    trackers(fake("a"))
    handshake.begin(object(), out=None).finish(1)


def test_prefetch_asks_every_enabled_tracker(trackers):
    calls = []
    trackers(fake("a", calls=calls), fake("b", calls=calls))
    handshake.prefetch(object())
    assert calls == ["a", "b"]


def test_a_refused_begin_is_raised_as_it_is_and_no_tracker_after_it_begins(trackers):
    begun = []

    def refuse(plan, out, hs):
        raise CredentialRefused("toy refused the credentials")

    later = fake("b")
    later.begin = lambda plan, out, hs: begun.append("b")
    trackers(SimpleNamespace(NAME="a", RUN_ENV=(), begin=refuse), later)
    with pytest.raises(CredentialRefused) as refused:
        handshake.begin(object(), out=None)
    assert refused.value.exit_code == 2 and begun == []  # nothing starts after a refusal


# ------------------------------------------------------------------ on a real plan: the trackers its trackers: section turns on

def test_a_plan_without_trackers_checks_reserves_and_begins_nothing(work):
    plan = planned_for(work, "  framework: megatron\n", {}).plan
    assert handshake.online_check(plan) == [] and handshake.run_env_names(plan) == ()
    handshake.prefetch(plan)
    hs = handshake.begin(plan, Output(masker=Masker()))
    assert (hs.env, hs.links) == ({}, {})
    hs.finish(0, b"")


def test_a_plans_run_variables_are_its_trackers_in_registry_order(work):
    plan = planned_for(work, "  disable_wandb: false\n  disable_mlflow: false\n",
                       {"WANDB_MODE": "offline", "MLFLOW_TRACKING_URI": "http://127.0.0.1:1"}).plan
    assert handshake.run_env_names(plan) == tracker("mlflow").RUN_ENV + tracker("wandb").RUN_ENV
    assert list(TRACKERS).index("mlflow") < list(TRACKERS).index("wandb")
