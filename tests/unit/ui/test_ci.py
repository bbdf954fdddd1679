"""CI integration: masks first, annotations with file:line, groups (the step summary: session/test_summary.py).

Every check runs the real CLI (``python -m runner``) or the real module with a
canary secret, and asserts the canary appears nowhere but the ``::add-mask::`` lines.
"""

from __future__ import annotations

import base64
import json
import re
import sys
import uuid
from pathlib import Path

import pytest

from cli_runner import run_cli
from engine_fixtures import common_forms
from plan_factory import plan_from, write_project

from runner.ui import ci

ENV_CANARY = f"canary-ci-env-{uuid.uuid4().hex[:12]}"
FILE_CANARY = f"canary-ci-file-{uuid.uuid4().hex[:12]}"
CANARIES = (ENV_CANARY, FILE_CANARY)


def assert_clean(text: str, where: str) -> None:
    for value in CANARIES:
        for form in common_forms(value):
            assert form not in text, f"a canary form leaked in {where}"


def run(args, cwd: Path, stdout=None, **env_extra):
    streams = {} if stdout is None else {"stdout": stdout}
    return run_cli(cwd, *args, env={"HF_TOKEN": ENV_CANARY, **env_extra}, timeout=60, **streams)


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path, "container:\n  gpu: none\n  options:\n    image: busybox\n    env: [HF_TOKEN, WANDB_API_KEY]\n",
                         f"WANDB_API_KEY={FILE_CANARY}\n")


BROKEN = "container:\n  gpu: none\n  options:\n    image: busybox\n    env:\n      - WANDB_API_KEY\n      - HF_TOKEN=literal-in-yaml\n"
BROKEN_LINE = 7  # the HF_TOKEN=... entry


def split_masks(stderr: str) -> tuple[list[str], list[str]]:
    lines = stderr.splitlines()
    n = 0
    while n < len(lines) and lines[n].startswith("::add-mask::"):
        n += 1
    return lines[:n], lines[n:]


def after_masks(stdout: str) -> str:
    """stdout past its leading ::add-mask:: lines (they lead stdout too, unless it is JSON or a file)."""
    return "\n".join(split_masks(stdout)[1])


def test_masks_are_the_first_lines_and_values_appear_nowhere_else(project):
    result = run(["plan", "--", "echo", "hi"], project, GITHUB_ACTIONS="true", PRIMUS_RUNNER_ADD_MASK="1")
    assert result.returncode == 0, result.stderr
    masks, rest = split_masks(result.stderr)
    registered = {line.removeprefix("::add-mask::") for line in masks}
    for value in CANARIES:
        assert value in registered
        assert base64.b64encode(value.encode()).decode() in registered
    assert not any("::add-mask::" in line for line in rest)
    assert_clean("\n".join(rest), "stderr after the masks")
    assert_clean(after_masks(result.stdout), "stdout")
    assert "WANDB_API_KEY" in result.stdout and "HF_TOKEN" in result.stdout


def test_masks_come_first_even_when_the_config_is_broken(project):
    (project / ".primus.yaml").write_text(BROKEN)
    result = run(["plan", "--", "echo", "hi"], project, GITHUB_ACTIONS="true", PRIMUS_RUNNER_ADD_MASK="1")
    assert result.returncode == 2
    masks, rest = split_masks(result.stderr)
    assert {ENV_CANARY, FILE_CANARY} <= {m.removeprefix("::add-mask::") for m in masks}
    assert_clean("\n".join(rest) + after_masks(result.stdout), "output after the masks")


def test_masks_come_first_when_the_yaml_does_not_parse(project):
    (project / ".primus.yaml").write_text("container:\n  options: [unclosed\n")
    result = run(["plan", "--", "echo", "hi"], project, GITHUB_ACTIONS="true", PRIMUS_RUNNER_ADD_MASK="1")
    assert result.returncode == 2
    masks, rest = split_masks(result.stderr)
    assert {ENV_CANARY, FILE_CANARY} <= {m.removeprefix("::add-mask::") for m in masks}
    assert any(line.startswith("::error file=.primus.yaml,line=") for line in rest), result.stderr
    assert_clean("\n".join(rest) + after_masks(result.stdout), "output after the masks")


@pytest.mark.parametrize("command", [["plan", "--", "true"], ["check"]])
def test_config_error_is_an_annotation_with_file_and_line(project, command):
    (project / ".primus.yaml").write_text(BROKEN)
    result = run(command, project, GITHUB_ACTIONS="true", PRIMUS_RUNNER_ADD_MASK="1", GITHUB_WORKSPACE=str(project))
    assert result.returncode == 2
    _, rest = split_masks(result.stderr)
    errors = [line for line in rest if line.startswith("::error ")]
    assert any(line.startswith(f"::error file=.primus.yaml,line={BROKEN_LINE},") and "HF_TOKEN is a secret" in line for line in errors), result.stderr
    assert_clean("\n".join(rest) + after_masks(result.stdout), "annotations")


def test_json_stdout_stays_parseable_under_actions(project):
    result = run(["--json", "plan", "--", "echo", "hi"], project, GITHUB_ACTIONS="true", PRIMUS_RUNNER_ADD_MASK="1")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["env"]["HF_TOKEN"] == "***"
    assert result.stderr.startswith("::add-mask::")


def test_masks_are_opt_in_under_actions(project):
    """Under Actions without PRIMUS_RUNNER_ADD_MASK=1 no value is printed, not even in a mask line."""
    result = run(["plan", "--", "echo", "hi"], project, GITHUB_ACTIONS="true")
    assert result.returncode == 0, result.stderr
    assert "::add-mask::" not in result.stdout + result.stderr
    assert_clean(result.stdout + result.stderr, "output under Actions without the opt-in")


def test_no_workflow_commands_outside_actions(project):
    result = run(["plan", "--", "echo", "hi"], project, CI="true")
    assert result.returncode == 0, result.stderr
    assert "::add-mask::" not in result.stdout + result.stderr
    assert "\x1b[" not in result.stdout + result.stderr  # CI=true: no colour
    assert_clean(result.stdout + result.stderr, "output without Actions")


def test_warnings_become_warning_annotations(project):
    (project / ".env").chmod(0o644)  # a world-readable env file is warned about
    result = run(["plan", "--", "echo", "hi"], project, GITHUB_ACTIONS="true", PRIMUS_RUNNER_ADD_MASK="1")
    _, rest = split_masks(result.stderr)
    assert any(line.startswith("::warning::") for line in rest), result.stderr


def test_node_agent_never_prints_masks(monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("PRIMUS_RUNNER_ADD_MASK", "1")
    monkeypatch.setenv("HF_TOKEN", ENV_CANARY)
    monkeypatch.setattr(ci, "_enabled", True)
    monkeypatch.setattr(ci, "_registered", set())

    from runner.context import early_masks
    from runner.options import Sources

    early_masks("node-agent", Sources(), False, None)
    ci.register_masks([ENV_CANARY])
    assert capsys.readouterr() == ("", "")


def test_register_masks_once_per_value_and_per_line(monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("PRIMUS_RUNNER_ADD_MASK", "1")
    monkeypatch.setattr(ci, "_enabled", True)
    monkeypatch.setattr(ci, "_registered", set())
    multi = f"{ENV_CANARY}\nsecond-line-{FILE_CANARY}"
    ci.register_masks([ENV_CANARY, multi])
    ci.register_masks([ENV_CANARY])
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines.count(f"::add-mask::{ENV_CANARY}") == 1
    assert f"::add-mask::second-line-{FILE_CANARY}" in lines
    assert all(line.startswith("::add-mask::") for line in lines)


def test_annotation_escapes_and_relative_file(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    text = ci.annotation("error", "100% wrong\nsecond line", f"{tmp_path}/conf,ig/a:b.yaml:12", "t")
    assert text == "::error file=conf%2Cig/a%3Ab.yaml,line=12,title=t::100%25 wrong%0Asecond line"
    assert ci.annotation("warning", "plain") == "::warning::plain"
    assert ci.annotation("error", "m", "command line (--env)") == "::error::m"


@pytest.mark.parametrize("flavor", ["github", "gitlab", "none"])
def test_group_markers(monkeypatch, capfd, flavor):
    for name in ("GITHUB_ACTIONS", "GITLAB_CI"):
        monkeypatch.delenv(name, raising=False)
    if flavor == "github":
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("PRIMUS_RUNNER_ADD_MASK", "1")
    if flavor == "gitlab":
        monkeypatch.setenv("GITLAB_CI", "true")
    monkeypatch.setattr(ci, "_enabled", True)
    with ci.group("Job output: primus-1234"):
        sys.stdout.write("job line\n")
    out = capfd.readouterr().out
    if flavor == "github":
        assert out == "::group::Job output: primus-1234\njob line\n\n::endgroup::\n"
    elif flavor == "gitlab":
        start = re.match(r"\x1b\[0Ksection_start:(\d+):([a-z0-9_.-]+)\[collapsed=true\]\r\x1b\[0KJob output: primus-1234\n", out)
        assert start, repr(out)
        assert "job line\n" in out
        assert re.search(r"\x1b\[0Ksection_end:\d+:" + re.escape(start.group(2)) + r"\r\x1b\[0K\n$", out), repr(out)
    else:
        assert out == "job line\n"


def test_masks_also_lead_stdout_unless_it_is_json_or_a_file(project, tmp_path):
    """Whichever stream a pipeline reads, the masks come first; a redirected file gets none."""
    result = run(["plan", "--", "echo", "hi"], project, GITHUB_ACTIONS="true", PRIMUS_RUNNER_ADD_MASK="1")
    masks, rest = split_masks(result.stdout)
    assert {m.removeprefix("::add-mask::") for m in masks} >= set(CANARIES)
    assert_clean("\n".join(rest), "stdout after the masks")
    as_json = run(["--json", "plan", "--", "echo", "hi"], project, GITHUB_ACTIONS="true", PRIMUS_RUNNER_ADD_MASK="1")
    assert "::add-mask::" not in as_json.stdout
    target = tmp_path / "plan-output.txt"
    with open(target, "w") as fh:
        redirected = run(["plan", "--", "echo", "hi"], project, stdout=fh, GITHUB_ACTIONS="true", PRIMUS_RUNNER_ADD_MASK="1")
    assert redirected.returncode == 0
    assert "::add-mask::" not in target.read_text() and "HF_TOKEN" in target.read_text()
    assert redirected.stderr.startswith("::add-mask::")
