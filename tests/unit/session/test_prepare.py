"""The front half runs once per command: one config load and one plan, secret references included."""

from __future__ import annotations

import json

import runner.config
import runner.session.prepare as prepare_module
from runner.options import Sources
from runner.ui import Output

CANARY = "prepare-once-canary-9d2e71"


def _counting(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_references_are_resolved_within_one_plan(work, monkeypatch):
    (work / ".primus.yaml").write_text(
        "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n    env: [HF_TOKEN]\n"
        "secrets:\n  HF_TOKEN: env:SOURCE_OF_HF\n")
    monkeypatch.setenv("SOURCE_OF_HF", CANARY)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    loads = _counting(monkeypatch, runner.config, "load_config")  # what every loader of a command's config calls
    monkeypatch.setattr(prepare_module, "load_config", runner.config.load_config)
    plans = _counting(monkeypatch, prepare_module, "build_plan")
    prepared = prepare_module.prepare(Output(), Sources(), ["true"])
    plan = prepared.plan
    assert loads == ["load_config"] and plans == ["build_plan"]
    assert plan.job.secret_env()["HF_TOKEN"].reveal() == CANARY  # the reference's value, in the one plan
    assert next(d for d in plan.job.forwarded if d.name == "HF_TOKEN").source == "env:SOURCE_OF_HF"
    assert prepared.scope.masker.mask(f"x {CANARY} y") != f"x {CANARY} y"


def test_a_dry_run_shows_where_a_reference_would_come_from(work, monkeypatch):
    (work / ".primus.yaml").write_text(
        "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n    env: [HF_TOKEN]\n"
        "secrets:\n  HF_TOKEN: env:SOURCE_OF_HF\n")
    monkeypatch.setenv("SOURCE_OF_HF", CANARY)
    plans = _counting(monkeypatch, prepare_module, "build_plan")
    plan = prepare_module.prepare(Output(), Sources(), ["true"], resolve_refs=False).plan
    assert plans == ["build_plan"]
    assert CANARY not in repr(plan.to_dict()) and "HF_TOKEN" in plan.to_dict()["secrets"]


def test_dry_run_true_in_the_config_runs_no_reference(work, monkeypatch):
    """`main: {dry_run: true}`: a launch is a dry run, so no `cmd:` reference is run (its marker never appears)."""
    import subprocess
    import sys

    marker = work / "ran"
    (work / ".primus.yaml").write_text(
        "main:\n  dry_run: true\ncontainer:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n    env: [HF_TOKEN]\n"
        f"secrets:\n  HF_TOKEN: cmd:sh -c 'touch {marker}; echo {CANARY}'\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "DOCKER_HOST": "unix:///nonexistent/docker.sock", "PRIMUS_RUNNER_TRUST_PROJECT": "1"}
    result = subprocess.run([sys.executable, "-m", "runner", "up", "--", "true"], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert not marker.exists() and "HF_TOKEN" in result.stdout


def test_check_loads_the_config_once_and_runs_each_reference_once(work, monkeypatch, capsys):
    from runner.commands.check import run_check
    from runner.options import CheckOptions

    ran = work / "ran"
    (work / ".primus.yaml").write_text(
        "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n    env: [HF_TOKEN]\n"
        f"secrets:\n  HF_TOKEN: cmd:sh -c 'echo once >> {ran}; echo {CANARY}'\n")
    monkeypatch.setenv("PRIMUS_RUNNER_TRUST_PROJECT", "1")
    loads = _counting(monkeypatch, runner.config, "load_config")
    monkeypatch.setattr(prepare_module, "load_config", runner.config.load_config)
    plans = _counting(monkeypatch, prepare_module, "build_plan")
    assert run_check(CheckOptions(("true",), Sources(), engine="process"), Output()) == 0
    assert loads == ["load_config"] and plans == ["build_plan"]
    assert ran.read_text().splitlines() == ["once"]
    shown = capsys.readouterr()
    assert "secret HF_TOKEN (cmd:" in shown.err and CANARY not in shown.out + shown.err


def test_plan_runs_no_secret_reference_and_check_does(cli, tmp_path):
    marker = tmp_path / "the-reference-ran"
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n    env: [HF_TOKEN]\n"
                                           f"secrets:\n  HF_TOKEN: 'cmd:touch {marker}'\n")
    rc, out, err = cli("--json", "--trust-project", "plan", "--", "true")
    assert rc == 0, err
    assert json.loads(out)["env_sources"]["HF_TOKEN"]["source"].startswith("cmd:touch")  # where it would come from
    assert not marker.exists()
    cli("--trust-project", "check", "--", "true")
    assert marker.exists()  # check asks the store: the reference runs (the test could see it)
