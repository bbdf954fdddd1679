"""The CI step summary: image, forwarded names, tracker links, exit code; names only, never values."""

from __future__ import annotations

import uuid

from engine_fixtures import common_forms
from plan_factory import plan_from

from runner.session.summary import summary_markdown, write_summary
from runner.ui import ci

ENV_CANARY = f"canary-summary-env-{uuid.uuid4().hex[:12]}"
FILE_CANARY = f"canary-summary-file-{uuid.uuid4().hex[:12]}"


def assert_clean(text: str, where: str) -> None:
    for value in (ENV_CANARY, FILE_CANARY):
        for form in common_forms(value):
            assert form not in text, f"a canary form leaked in {where}"


def _plan(tmp_path, monkeypatch, host_env):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    config = "container:\n  options:\n    image: primus-test/busybox:latest\n    env: [HF_TOKEN, PLAIN, WANDB_API_KEY]\n"
    return plan_from(tmp_path, config, ["echo", "hi"], host=host_env, flags=["--gpu", "none"])


def test_step_summary_has_names_links_exit_code_and_no_value(tmp_path, monkeypatch):
    planned = _plan(tmp_path, monkeypatch, {"HF_TOKEN": ENV_CANARY, "PLAIN": "visible"})
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("PRIMUS_RUNNER_ADD_MASK", "1")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setattr(ci, "_enabled", True)
    links = {"mlflow": f"http://user:{FILE_CANARY}@127.0.0.1:5000/#/experiments/1/runs/abc", "wandb": "/tmp/wandb/run-1"}
    assert write_summary(planned.require(), 3, links, planned.scope.masker)
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended, not replaced
    for needle in ("primus-test/busybox:latest", "`PLAIN`", "`HF_TOKEN`", "exit code | 3", "http://127.0.0.1:5000/#/experiments/1/runs/abc", "/tmp/wandb/run-1"):
        assert needle in text, needle
    assert "`WANDB_API_KEY`" in text  # unset: listed as not forwarded
    assert "visible" not in text  # names only, never values
    assert_clean(text, "step summary")


def test_no_step_summary_outside_actions(tmp_path, monkeypatch):
    planned = _plan(tmp_path, monkeypatch, {"HF_TOKEN": ENV_CANARY})
    summary = tmp_path / "summary.md"
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert not write_summary(planned.require(), 0, {})
    assert not summary.exists()


def test_names_and_links_cannot_break_the_table_and_a_link_loses_its_credentials():
    from types import SimpleNamespace as Plan, SimpleNamespace as Decision

    job = Plan(name="job|x", gpu="none", skipped=[Decision(name="Z")],
               forwarded=[Decision(name="B", secret=True), Decision(name="A", secret=False)])
    plan = Plan(job=job, container=Plan(image="img`1"))
    links = {"a|b": "javascript:alert(1)", "mlflow": f"https://u:{FILE_CANARY}@m.example/runs/1"}
    assert summary_markdown(plan, 2, links).split("\n") == [
        "### primus-runner: `job\\|x` failed (exit code 2)", "", "| | |", "| --- | --- |",
        "| image | `img'1` |", "| GPU | none |", "| exit code | 2 |",
        "| forwarded variables | `A` |", "| forwarded secrets (names) | `B` |", "| not forwarded | `Z` |",
        "| a\\|b run | `javascript:alert(1)` |",  # only an http(s) target is a link
        "| mlflow run | [https://m.example/runs/1](https://m.example/runs/1) |", "", "",
    ]
