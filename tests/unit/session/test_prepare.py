"""The front half of every command (runner.session.prepare): it runs once per command (one config load and one
plan, secret references included), resolves only the references a launch forwards, and installs the masker
that keeps every value in scope (a reference's too) out of what is printed afterwards."""

from __future__ import annotations

import json

import pytest

import runner.config
import runner.session.prepare as prepare_module
from engine_fixtures import assert_no_leak
from runner.errors import ConfigError
from runner.options import Sources
from runner.secrets import Secret
from runner.ui import Output
from secret_ref_helpers import canary

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


# ------------------------------------------------------------------ what prepare gives and installs

IMAGE = "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n"


def program(path, body: str):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_a_references_value_is_masked_in_everything_printed_after_prepare(work, monkeypatch, capsys):
    value = canary("ref")
    # The value exists only in the program's output: not in the config, the environment or the env file.
    store = program(work / "store", f"echo {value}\n")
    (work / ".primus.yaml").write_text(IMAGE + "    env: [MODEL_SETTING]\nsecrets:\n  MODEL_SETTING: cmd:" + str(store) + "\n")
    monkeypatch.setenv("PRIMUS_RUNNER_TRUST_PROJECT", "1")
    out = Output()
    prepared = prepare_module.prepare(out, Sources(), ["true"])
    assert prepared.plan.job.secret_env()["MODEL_SETTING"].reveal() == value  # a reference makes any name a secret
    assert "MODEL_SETTING" in prepared.config.data["passthrough"]["secrets"]
    out.result(f"stdout {value}")
    out.warn(f"stderr {value}")
    shown = capsys.readouterr()
    assert_no_leak(shown.out + shown.err, [value], "what prepare's caller printed")
    assert "stdout ***" in shown.out


def test_a_failing_references_stderr_is_masked_by_the_environments_secrets(work, monkeypatch):
    value = canary("env")
    monkeypatch.setenv("OTHER_TOKEN", value)  # a secret by its name, in the runner's environment
    store = program(work / "store", f"echo 'cannot log in as {value}' >&2\nexit 1\n")  # the store echoes it back
    (work / ".primus.yaml").write_text(IMAGE + "    env: [HF_TOKEN]\nsecrets:\n  HF_TOKEN: cmd:" + str(store) + "\n")
    monkeypatch.setenv("PRIMUS_RUNNER_TRUST_PROJECT", "1")
    with pytest.raises(ConfigError) as refused:
        prepare_module.prepare(Output(), Sources(), ["true"])
    text = str(refused.value) + repr(refused.value)
    assert "secret HF_TOKEN" in text and "cannot log in as ***" in text
    assert_no_leak(text, [value], "the failing reference's message")


def test_a_reference_the_launch_does_not_forward_is_never_run_and_given_values_are_used_as_they_are(work, monkeypatch):
    ran, unused_ran = work / "ran", work / "unused-ran"
    store = program(work / "store", f"touch {ran}\necho from-the-store\n")
    unused = program(work / "unused", f"touch {unused_ran}\necho from-the-store\n")
    (work / ".primus.yaml").write_text(IMAGE + "    env: [HF_TOKEN]\nsecrets:\n"
                                       f"  UNUSED_TOKEN: cmd:{unused}\n  HF_TOKEN: cmd:{store}\n")
    monkeypatch.setenv("PRIMUS_RUNNER_TRUST_PROJECT", "1")
    given = canary("given")
    plan = prepare_module.prepare(Output(), Sources(), ["true"], resolved={"HF_TOKEN": Secret(given)}).plan
    assert not ran.exists()  # check resolved it already: not asked again
    assert plan.job.secret_env()["HF_TOKEN"].reveal() == given and "UNUSED_TOKEN" not in plan.job.secret_env()
    prepare_module.prepare(Output(), Sources(), ["true"])
    assert ran.exists() and not unused_ran.exists()  # UNUSED_TOKEN is not forwarded: nothing asks for it


def test_lookup_reads_the_environment_first_then_the_env_file(work, monkeypatch):
    (work / ".primus.yaml").write_text(IMAGE)
    (work / "job.env").write_text("ONLY_IN_FILE=file\nIN_BOTH=file\n")
    monkeypatch.setenv("IN_BOTH", "environment")
    monkeypatch.delenv("ONLY_IN_FILE", raising=False)
    prepared = prepare_module.prepare(Output(), Sources(env_file=str(work / "job.env")), ["true"])
    assert prepared.lookup("IN_BOTH") == "environment" and prepared.lookup("ONLY_IN_FILE") == "file"
    assert prepared.lookup("NOWHERE_SET") is None


def test_an_unset_allowlisted_name_is_one_notice_unless_quiet_or_the_caller_lists_it(work, monkeypatch, capsys):
    (work / ".primus.yaml").write_text(IMAGE + "    env: [NOT_SET_HERE, ALSO_NOT_SET]\n")
    for name in ("NOT_SET_HERE", "ALSO_NOT_SET"):
        monkeypatch.delenv(name, raising=False)
    prepare_module.prepare(Output(), Sources(), ["true"])
    err = capsys.readouterr().err
    assert err.count(prepare_module.unset_notice(["NOT_SET_HERE", "ALSO_NOT_SET"])) == 1
    prepare_module.prepare(Output(), Sources(), ["true"], quiet=True)
    prepare_module.prepare(Output(), Sources(), ["true"], report_unset=False)
    assert "NOT_SET_HERE" not in capsys.readouterr().err
