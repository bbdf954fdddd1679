"""The grammar of ``secrets:`` (runner.secrets.refs.grammar): parsing with file:line, every
refusal naming the fix and never echoing a value; the schemes are the registered stores.
An ``env:`` reference is a rename, and a rename obeys ``passthrough.deny`` (a cloned repository
must not forward a variable your config denies, or one that configures the runner, under another name)."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_in_clone
from engine_fixtures import assert_no_leak
from runner.config import load_config
from runner.secrets.refs.grammar import SecretRef, parse_ref, parse_refs
from runner.secrets.refs.resolve import resolve
from secret_ref_helpers import canary, no_env, ref, secret_file


def test_parse_refs_reads_every_source_with_file_and_line(work):
    (work / ".primus.yaml").write_text(
        "secrets:\n"
        "  HF_TOKEN: pass:ml/hf\n"
        "  WANDB_API_KEY: aws-sm:prod/wandb#api_key\n"
        "  DATABRICKS_TOKEN: cmd:op read op://ml/databricks/token\n"
        "  MLFLOW_TRACKING_TOKEN: file:/run/secrets/mlflow\n"
        "  GH_TOKEN: env:GITHUB_TOKEN\n"
    )
    refs, problems = parse_refs(load_config())
    assert problems == []
    got = {r.name: (r.scheme, r.target, r.source) for r in refs}
    assert got == {
        "HF_TOKEN": ("pass", "ml/hf", "pass:ml/hf"),
        "WANDB_API_KEY": ("aws-sm", "prod/wandb#api_key", "aws-sm:prod/wandb#api_key"),
        "DATABRICKS_TOKEN": ("cmd", "op read op://ml/databricks/token", "cmd:op read op://ml/databricks/token"),
        "MLFLOW_TRACKING_TOKEN": ("file", "/run/secrets/mlflow", "file:/run/secrets/mlflow"),
        "GH_TOKEN": ("env", "GITHUB_TOKEN", "env:GITHUB_TOKEN"),
    }
    where = {r.name: r.where for r in refs}
    assert where["HF_TOKEN"].endswith(".primus.yaml:2")
    assert where["GH_TOKEN"].endswith(".primus.yaml:6")


def test_no_secrets_section_is_no_refs(work):
    assert parse_refs(load_config()) == ([], [])


@pytest.mark.parametrize(
    "yaml_value",
    [
        "{value}",  # the token itself pasted where its reference belongs
        "'Bearer {value}'",
        "'file {value}'",  # no colon after a known scheme
        "'vault:{value}'",  # an unknown scheme
    ],
)
def test_a_value_that_is_not_a_reference_is_refused_and_never_echoed(work, yaml_value):
    value = canary("literal")
    (work / ".primus.yaml").write_text("secrets:\n  HF_TOKEN: " + yaml_value.format(value=value) + "\n")
    config = load_config()  # the schema leaves values to parse_refs: its error would quote the value
    refs, problems = parse_refs(config)
    assert refs == []
    assert len(problems) == 1
    assert problems[0].where.endswith(".primus.yaml:2")
    text = str(problems[0])
    assert "HF_TOKEN" in text and "not a secret reference" in text
    assert_no_leak(text, {"HF_TOKEN": value}, "the problem for a literal in secrets:")


def test_a_non_string_value_or_section_is_refused_without_echo(work):
    (work / ".primus.yaml").write_text("secrets:\n  PIN: 7391827364519283\n")
    _, problems = parse_refs(load_config())
    assert len(problems) == 1 and "7391827364519283" not in str(problems[0])
    value = canary("section")
    (work / ".primus.yaml").write_text(f"secrets: {value}\n")
    _, problems = parse_refs(load_config())
    assert len(problems) == 1 and problems[0].where.endswith(".primus.yaml:1")
    assert_no_leak(str(problems[0]), {"secrets": value}, "the problem for a literal secrets: section")


def test_an_invalid_variable_name_is_a_problem_with_its_line(work):
    (work / ".primus.yaml").write_text("secrets:\n  OK_NAME: env:X\n  1BAD: env:Y\n  'A-B': env:Z\n")
    refs, problems = parse_refs(load_config())
    assert [r.name for r in refs] == ["OK_NAME"]
    assert [p.where.rsplit("/", 1)[1] for p in problems] == [".primus.yaml:3", ".primus.yaml:4"]
    assert "'1BAD' is not a variable name" in str(problems[0]) and "'A-B'" in str(problems[1])


@pytest.mark.parametrize(
    "source, says",
    [
        ("env:not a name", "not a variable name"),
        ("env:", "nothing after"),
        ("file:relative/path", "absolute"),
        ("aws-sm:#key", "no secret id"),
        ("aws-sm:prod/wandb#", "no JSON key"),
        ("cmd:op read 'unclosed", "cannot split"),
        ("cmd:   ", "nothing after"),
    ],
)
def test_invalid_references_name_the_reference_and_the_fix(source, says):
    problem = parse_ref("TOKEN", source, "f:7")
    assert not isinstance(problem, SecretRef)
    assert says in str(problem) and source in str(problem) and problem.where == "f:7"


def test_file_reference_accepts_a_home_relative_path(work):
    value = canary("home-file")
    secret_file(work / "token", value + "\n")
    assert resolve([ref("T", "file:~/token")], no_env)["T"].reveal() == value

def test_an_env_reference_to_a_denied_variable_is_refused(tmp_path):
    secret = "canary-aws-secret-4d1e8b0f6a2c"
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".primus.yaml").write_text("passthrough:\n  deny: [AWS_SECRET_ACCESS_KEY]\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    env: [Y_TOKEN]\n"
                                       "secrets:\n  Y_TOKEN: env:AWS_SECRET_ACCESS_KEY\n")
    result = run_in_clone(repo, "--json", "plan", "--", "true", env={"AWS_SECRET_ACCESS_KEY": secret})
    forwarded = sorted(json.loads(result.stdout)["secrets"]) if result.returncode == 0 else []
    assert result.returncode == 2, f"forwarded under another name: {forwarded}"
    assert "secrets.Y_TOKEN" in result.stderr and "AWS_SECRET_ACCESS_KEY" in result.stderr and "passthrough.deny" in result.stderr
    assert_no_leak(result.stdout + result.stderr, {"AWS_SECRET_ACCESS_KEY": secret}, "plan")


def test_an_env_reference_to_a_runner_variable_is_refused(tmp_path):
    (tmp_path / "home").mkdir()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    env: [X_TOKEN]\n"
                                       "secrets:\n  X_TOKEN: env:PRIMUS_RUNNER_TRUST_PROJECT\n")
    result = run_in_clone(repo, "plan", "--", "true", env={"PRIMUS_RUNNER_TRUST_PROJECT": "0"})
    assert result.returncode == 2 and "secrets.X_TOKEN" in result.stderr, result.stderr
