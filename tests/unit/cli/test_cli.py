"""The CLI as users and pipelines see it: exit codes, JSON, and no canary value anywhere."""

from __future__ import annotations

import json
import os

import pytest

from cli_runner import run_cli
from engine_fixtures import common_forms
from plan_factory import write_project

ENV_CANARY = "canary-env-0b7c51d2e9f4"
FILE_CANARY = "canary-file-9a4e2c6f10d3"


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path, "container:\n  gpu: none\n  options:\n    image: busybox\n    env: [HF_TOKEN, WANDB_API_KEY, PLAIN]\n",
                         f"WANDB_API_KEY={FILE_CANARY}\nPLAIN=visible\n")


def assert_clean(text: str, where: str) -> None:
    for value in (ENV_CANARY, FILE_CANARY):
        for form in common_forms(value):
            assert form not in text, f"a canary form leaked in {where}"


SECRET_ENV = {"HF_TOKEN": ENV_CANARY, "PRIMUS_SOME_TOKEN": ENV_CANARY}


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "--", "echo", "hi"],
        ["--json", "plan", "--", "echo", "hi"],
        ["--verbose", "plan", "--", "echo", "hi"],
        ["up", "--dry-run", "--", "echo", "hi"],
        ["--json", "check"],
        ["check"],
    ],
)
def test_no_canary_in_output(project, args):
    result = run_cli(project, *args, env={**SECRET_ENV, "DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.returncode == (1 if "check" in args else 0), result.stderr  # check finds no engine there: exit 1
    assert_clean(result.stdout + result.stderr, " ".join(args))
    if "plan" in args:
        assert "HF_TOKEN" in result.stdout and "WANDB_API_KEY" in result.stdout


def test_plan_json_has_the_contract_keys(project):
    result = run_cli(project, "--json", "plan", "--", "python", "train.py", env=SECRET_ENV)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["image"] == "busybox"
    assert data["command"] == ["python", "train.py"]
    assert data["env"]["HF_TOKEN"] == "***" and data["env"]["WANDB_API_KEY"] == "***"
    assert data["env"]["PLAIN"] == "visible"
    assert set(data["secrets"]) == {"HF_TOKEN", "WANDB_API_KEY"}
    assert {"name": "PRIMUS_SOME_TOKEN", "reason": "secret: prefixes never forward secrets; list it by name to forward it"} in data["skipped"]


def test_error_messages_name_the_secret_but_never_the_value(project):
    # A literal that is only in the YAML: the environment's masker cannot hide it, only the message can.
    yaml_canary = "canary-yaml-only-5e1f0a9c7b"
    assert yaml_canary not in os.environ.values() and yaml_canary not in SECRET_ENV.values()
    (project / "bad.yaml").write_text(f"container:\n  options:\n    env: ['HF_TOKEN={yaml_canary}']\n")
    result = run_cli(project, "--verbose", "--config", "bad.yaml", "plan", "--", "true", env=SECRET_ENV)
    assert result.returncode == 2
    assert "HF_TOKEN" in result.stderr and "bad.yaml:3" in result.stderr
    assert "Traceback" not in result.stderr
    assert "yaml-only-5e1f0a9c7b" not in result.stdout + result.stderr
    assert_clean(result.stdout + result.stderr, "error message")


def test_check_json_reports_problems_with_where(project):
    (project / "bad.yaml").write_text("container:\n  options:\n    devices: [/dev/x]\n")
    result = run_cli(project, "--json", "--config", "bad.yaml", "check")
    assert result.returncode == 2
    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert data["problems"][0]["where"] == "bad.yaml:3"  # the path as the user gave it
    assert "did you mean 'device'" in data["problems"][0]["message"]


def test_missing_required_secret_exits_2_listing_all(project):
    (project / "req.yaml").write_text("passthrough:\n  required: [HF_TOKEN, DATABRICKS_TOKEN, OTHER_NEEDED]\n")
    result = run_cli(project, "--config", "req.yaml", "plan", "--", "true")
    assert result.returncode == 2
    line = [l for l in result.stderr.splitlines() if "missing required" in l][0]
    assert all(n in line for n in ("HF_TOKEN", "DATABRICKS_TOKEN", "OTHER_NEEDED"))


def test_usage_errors_exit_2_without_traceback(project):
    for args in (["plan", "--gpu", "tpu", "--", "x"], ["nonsense"], ["plan"]):
        result = run_cli(project, *args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr


def test_version_and_help(project):
    result = run_cli(project, "--version")
    assert result.returncode == 0 and result.stdout.startswith("primus-runner ")
    for command in ("check", "plan", "up", "build", "submit", "audit"):
        help_text = run_cli(project, command, "--help")
        assert help_text.returncode == 0 and "example" in help_text.stdout


def test_console_script_is_installed():
    from shutil import which

    assert which("primus-runner"), "pip install -e . installs the primus-runner console script"
