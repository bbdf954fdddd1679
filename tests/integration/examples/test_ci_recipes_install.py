"""Each CI recipe's install step, run for real: pip installs primus-runner from the repository
(no package index has it), as the recipe says, and the console script answers afterwards.

The repository stands in for the recipe's git URL (``PRIMUS_RUNNER_SOURCE=file://<a copy>``);
``PIP_NO_DEPS`` keeps the step off the network for the runner's dependencies (the build
backend itself comes from pip's cache or PyPI, as in any pip install).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
RECIPES = ROOT / "docs" / "ci"


def github_install(name: str) -> tuple[dict, str]:
    job = next(iter(yaml.safe_load((RECIPES / name).read_text())["jobs"].values()))
    (step,) = [s["run"] for s in job["steps"] if "run" in s and "pip" in s["run"] and "install" in s["run"]]
    return dict(job.get("env", {})), step


def gitlab_install(name: str) -> tuple[dict, str]:
    doc = yaml.safe_load((RECIPES / name).read_text())
    job = next(v for v in doc.values() if isinstance(v, dict) and "script" in v)
    return dict(job.get("variables", {})), "\n".join(job["before_script"])


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of the repository: pip builds in the source tree, which must not be this checkout."""
    copy = tmp_path_factory.mktemp("src") / "primus-runner"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", "primus-runs", "__pycache__", "*.egg-info", "build",
                                                               ".pytest_cache", "bench"))
    return copy


@pytest.mark.parametrize("recipe", ["github-actions.yml", "slurm-github-actions.yml", "gitlab-ci.yml"])
def test_recipe_install_step_installs_from_the_repository(recipe, source, tmp_path):
    job_env, script = (gitlab_install if recipe.startswith("gitlab") else github_install)(recipe)
    assert "primus-runner[all]\"" not in script and "@ $PRIMUS_RUNNER_SOURCE" in script, script
    assert str(job_env.get("PRIMUS_RUNNER_SOURCE", "")).startswith("git+https://"), "the recipe names the repository"
    base = tmp_path / "ci-python"  # the CI machine's python3 (setup-python, the login node's)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(base)], check=True)
    work = tmp_path / "checkout"
    work.mkdir()
    github_path = tmp_path / "github_path"
    github_path.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    for key, value in job_env.items():
        if "${{" not in str(value) or "github.workspace" in str(value):
            env[key] = str(value).replace("${{ github.workspace }}", str(work))
    env.update(PATH=f"{base / 'bin'}:{env['PATH']}", PRIMUS_RUNNER_SOURCE=f"file://{source}", PIP_NO_DEPS="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", GITHUB_PATH=str(github_path), HOME=str(tmp_path))
    step = subprocess.run(["bash", "-eo", "pipefail", "-c", script + "\ncommand -v primus-runner > .where"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert step.returncode == 0, step.stdout + step.stderr
    added = [line for line in github_path.read_text().splitlines() if line]
    path = ":".join(added + [env["PATH"]])
    found = shutil.which("primus-runner", path=path) if added else (work / ".where").read_text().strip()
    assert found and str(tmp_path) in found, f"primus-runner not installed by the step: {found}"
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and re.fullmatch(r"primus-runner \S+ \(takes the command line of Primus CLI version \S+\)\n", version.stdout), version
