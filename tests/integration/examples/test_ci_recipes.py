"""The CI recipes in docs/ci/ run as written: commands taken from the YAML, real Docker.

Each test parses a recipe, sets the job's environment the way the CI would
(secrets from the store -> canary values, ``GITHUB_ACTIONS=true`` /
``GITLAB_CI=true``), runs every ``primus-runner`` step with bash in a scratch
project, and checks masks, annotations, groups/sections, step summary and report.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from engine_fixtures import assert_no_leak

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[3]
RECIPES = ROOT / "docs" / "ci"
SCHEMA = ROOT / "policies" / "report.schema.json"
# The sandboxed CI host refuses privileged containers, extra caps' rlimits and the video group.
PROJECT = "container:\n  gpu: none\n  options:\n    group-add: []\n    privileged: false\n    ulimit: \"nofile=1024:1024\"\n"
BROKEN = PROJECT + "    env:\n      - HF_TOKEN=pasted-into-yaml\n"
BROKEN_LINE = BROKEN.splitlines().index("      - HF_TOKEN=pasted-into-yaml") + 1  # 1-based, as editors count
# Prints both secrets, plain and base64: the runner must mask all of it.
SMOKE = 'echo "smoke: step 1 loss 2.31 token=$HF_TOKEN"; printf %s "$WANDB_API_KEY" | base64; echo "smoke: done"'


def github_job(name: str) -> tuple[dict[str, str], list[str]]:
    doc = yaml.safe_load((RECIPES / name).read_text())
    job = next(iter(doc["jobs"].values()))
    steps = [s["run"] for s in job["steps"] if "run" in s and "primus-runner " in s["run"] and "pip install" not in s["run"]]
    return dict(job.get("env", {})), steps


def gitlab_job(name: str) -> tuple[dict[str, str], list[str]]:
    doc = yaml.safe_load((RECIPES / name).read_text())
    job = next(v for k, v in doc.items() if isinstance(v, dict) and "script" in v)
    return dict(job.get("variables", {})), [line for line in job["script"] if line.startswith("primus-runner ")]


def ci_env(job_env: dict[str, str], canary: dict[str, str], busybox_image: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB_", "CI", "WANDB", "HF_", "MLFLOW", "PRIMUS_"))}
    for key, value in job_env.items():
        secret = re.fullmatch(r"\$\{\{\s*secrets\.(\w+)\s*\}\}", str(value))
        if secret:
            env[key] = canary[secret.group(1)]  # the CI's secret store
    assert {"WANDB_API_KEY", "HF_TOKEN"} <= set(env), "the recipe must take both secrets from the store"
    env.update(SMOKE_IMAGE=busybox_image, SMOKE_COMMAND=SMOKE, CI="true", NO_COLOR="1")
    env.update(extra)
    return env


def run_step(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """One step as the CI runs it: bash -e, stdout and stderr in one log, in order."""
    result = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    result.stdout = result.stdout.decode("utf-8", "surrogateescape")  # keep \r: GitLab's section markers use it
    return result


def masks_then_rest(log: str) -> tuple[set[str], str]:
    lines = log.splitlines()
    n = 0
    while n < len(lines) and lines[n].startswith("::add-mask::"):
        n += 1
    return {line.removeprefix("::add-mask::") for line in lines[:n]}, "\n".join(lines[n:])


def validate_report(path: Path) -> dict:
    import jsonschema

    doc = json.loads(path.read_text())
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(doc)
    return doc


@pytest.fixture
def project(tmp_path):
    (tmp_path / ".primus.yaml").write_text(PROJECT)
    return tmp_path


def test_github_recipe_masks_groups_summary_and_report(project, canary, busybox_image):
    job_env, steps = github_job("github-actions.yml")
    assert [s.split()[1] for s in steps] == ["check", "up"]
    summary = project / "step-summary.md"
    env = ci_env(job_env, canary, busybox_image, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary), GITHUB_WORKSPACE=str(project))
    used = {k: canary[k] for k in ("WANDB_API_KEY", "HF_TOKEN")}
    for script in steps:
        result = run_step(script, project, env)
        assert result.returncode == 0, result.stdout[-2000:].replace(used["HF_TOKEN"], "<HF>").replace(used["WANDB_API_KEY"], "<W>")
        # The store's secrets are masked by GitHub itself: no ::add-mask:: lines (they would
        # put the values into any file the step tees its log to), and no value in the log.
        registered, rest = masks_then_rest(result.stdout)
        assert registered == set() and "::add-mask::" not in rest
        assert_no_leak(result.stdout, used, f"log of step {script.split()[1]}")
    # the up step: job output folded into a group, and masked inside it
    assert re.search(r"^::group::job output: .*\n(.*\n)*smoke: step 1 loss 2\.31 token=\*\*\*\n(.*\n)*::endgroup::$", rest, re.M), rest
    text = summary.read_text()
    assert_no_leak(text, used, "step summary")
    for needle in (busybox_image, "`HF_TOKEN`", "`WANDB_API_KEY`", "| exit code | 0 |"):
        assert needle in text, needle
    doc = validate_report(project / "report.json")
    assert_no_leak((project / "report.json").read_bytes(), used, "report.json")
    assert doc["exit_code"] == 0 and doc["backend"] == "docker"
    assert sorted(doc["plan"]["secrets"]) == ["HF_TOKEN", "WANDB_API_KEY"]
    assert doc["plan"]["env"]["HF_TOKEN"] == "***"


def test_github_recipe_config_error_is_an_annotation(project, canary, busybox_image):
    (project / ".primus.yaml").write_text(BROKEN)
    job_env, steps = github_job("github-actions.yml")
    env = ci_env(job_env, canary, busybox_image, GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(project),
                 GITHUB_STEP_SUMMARY=str(project / "summary.md"))
    used = {k: canary[k] for k in ("WANDB_API_KEY", "HF_TOKEN")}
    for script in steps:  # check, then up: both refuse with the same annotation
        result = run_step(script, project, env)
        assert result.returncode == 2
        registered, rest = masks_then_rest(result.stdout)
        assert registered == set()
        assert re.search(rf"^::error file=\.primus\.yaml,line={BROKEN_LINE},title=primus-runner::HF_TOKEN is a secret", rest, re.M), rest
        assert_no_leak(result.stdout, used, "annotations")
    assert not (project / "report.json").exists()  # nothing launched, nothing reported
    assert not (project / "summary.md").exists()


def test_gitlab_recipe_sections_and_report(project, canary, busybox_image):
    job_vars, steps = gitlab_job("gitlab-ci.yml")
    assert [s.split()[1] for s in steps] == ["check", "up"]
    used = {k: canary[k] for k in ("WANDB_API_KEY", "HF_TOKEN")}
    env = ci_env({"WANDB_API_KEY": "${{ secrets.WANDB_API_KEY }}", "HF_TOKEN": "${{ secrets.HF_TOKEN }}"}, canary, busybox_image,
                 GITLAB_CI="true", CI_PROJECT_DIR=str(project))
    assert job_vars["SMOKE_COMMAND"] and "SMOKE_IMAGE" in job_vars
    for script in steps:
        result = run_step(script, project, env)
        assert result.returncode == 0, result.stdout[-1500:].replace(used["HF_TOKEN"], "<HF>").replace(used["WANDB_API_KEY"], "<W>")
        assert "::add-mask::" not in result.stdout  # GitLab masks from its own variable settings
        assert_no_leak(result.stdout, used, f"GitLab log of {script.split()[1]}")
    start = re.search(r"\x1b\[0Ksection_start:\d+:([a-z0-9_.-]+)\[collapsed=true\]\r\x1b\[0Kjob output: ", result.stdout)
    assert start, result.stdout
    assert re.search(r"\x1b\[0Ksection_end:\d+:" + re.escape(start.group(1)) + r"\r\x1b\[0K", result.stdout)
    assert "token=***" in result.stdout
    doc = validate_report(project / "report.json")
    assert_no_leak((project / "report.json").read_bytes(), used, "report.json")
    assert doc["exit_code"] == 0


@pytest.mark.slurm
def test_slurm_recipe_submit_wait_masks_summary_and_report(tmp_path_factory, canary, busybox_image, slurm_cluster):
    work = tmp_path_factory.mktemp("slurm-recipe")
    (work / ".primus.yaml").write_text(PROJECT + f"slurm:\n  partition: {slurm_cluster.partition}\n  master_port: 29517\n")
    job_env, steps = github_job("slurm-github-actions.yml")
    assert [s.split()[1] for s in steps] == ["check", "submit"]
    assert "--wait" in steps[1] and "--report report.json" in steps[1]
    summary = work / "step-summary.md"
    env = ci_env(job_env, canary, busybox_image, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary), GITHUB_WORKSPACE=str(work),
                 HOME=str(work), SMOKE_NODES="2", SMOKE_PARTITION=slurm_cluster.partition)
    used = {k: canary[k] for k in ("WANDB_API_KEY", "HF_TOKEN")}
    for script in steps:
        result = run_step(script, work, env)
        shown = result.stdout[-2000:].replace(used["HF_TOKEN"], "<HF>").replace(used["WANDB_API_KEY"], "<W>")
        assert result.returncode == 0, shown
        registered, rest = masks_then_rest(result.stdout)
        assert registered == set(), shown  # GitHub masks its store's secrets itself
        assert_no_leak(result.stdout, used, f"log of step {script.split()[1]}")
    assert "::group::job " in rest and "::endgroup::" in rest
    assert rest.count("smoke: step 1 loss 2.31 token=***") == 2, rest  # one line per node, masked
    text = summary.read_text()
    assert_no_leak(text, used, "step summary")
    assert "| exit code | 0 |" in text and "`HF_TOKEN`" in text
    doc = validate_report(work / "report.json")
    assert_no_leak((work / "report.json").read_bytes(), used, "report.json")
    assert doc["backend"] == "slurm" and doc["job_id"] and doc["exit_code"] == 0


@pytest.mark.parametrize("command", ["plan", "up", "submit"])
def test_github_actions_log_teed_to_a_file_holds_no_secret(project, canary, busybox_image, command, request):
    """The everyday `primus-runner … 2>&1 | tee job.log` under GitHub Actions (then an artifact
    upload): the file holds no secret value or encoding. Failed before: every value was
    printed as ::add-mask::VALUE into the teed stream."""
    if command == "submit":
        request.getfixturevalue("slurm_cluster")
    env_file = project / ".env"
    env_file.write_text(f"WANDB_API_KEY={canary['WANDB_API_KEY']}\n")  # a value GitHub cannot know
    env_file.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB_", "CI", "WANDB", "HF_", "MLFLOW", "PRIMUS_"))}
    env.update(GITHUB_ACTIONS="true", CI="true", NO_COLOR="1", HF_TOKEN=canary["HF_TOKEN"], GITHUB_WORKSPACE=str(project))
    launch = {"plan": "plan", "up": "up", "submit": "submit --wait --nodes 2"}[command]
    script = (f"set -o pipefail; primus-runner {launch} --image {busybox_image} --env HF_TOKEN --env WANDB_API_KEY "
              f"-- sh -c 'echo token=$HF_TOKEN' 2>&1 | tee job.log")
    result = subprocess.run(["bash", "-c", script], cwd=project, env=env, capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    log = (project / "job.log").read_bytes()
    assert b"::add-mask::" not in log
    assert_no_leak(log, {k: canary[k] for k in ("WANDB_API_KEY", "HF_TOKEN")}, f"{command}'s teed log")
    if command != "plan":
        assert b"token=***" in log
