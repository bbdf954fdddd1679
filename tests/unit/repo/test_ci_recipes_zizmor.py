"""The GitHub Actions recipes in docs/ci pass zizmor (the Actions security linter), offline,
with no finding of medium severity or above: actions pinned by commit, no persisted
checkout credentials, least permissions. zizmor audits ``DIR/.github/workflows``, so the
recipes are copied there. Under CI=true a missing zizmor fails (it is in the test extra)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

RECIPES = Path(__file__).resolve().parents[3] / "docs" / "ci"


def github_recipes() -> list[Path]:
    return sorted(p for p in RECIPES.glob("*.yml") if "\njobs:" in p.read_text() and "\non:" in p.read_text())


def test_there_are_github_recipes():
    assert len(github_recipes()) >= 2


def test_github_recipes_pass_zizmor_offline(tmp_path):
    zizmor = shutil.which("zizmor")
    if zizmor is None:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail("zizmor is not installed (pip install zizmor; it is in the test extra)")
        pytest.skip("zizmor is not installed")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for recipe in github_recipes():
        shutil.copy(recipe, workflows / recipe.name)
    result = subprocess.run([zizmor, "--offline", "--no-progress", "--format", "json", "--min-severity", "medium", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode in (0, 10, 11, 12, 13, 14), result.stderr  # 1x: findings (checked below)
    findings = json.loads(result.stdout or "[]")
    serious = [f"{f['ident']} ({f['determinations']['severity']}) at {_where(f)}: {f['desc']}"
               for f in findings if f["determinations"]["severity"].lower() in ("medium", "high")]
    assert not serious, "\n".join(serious)


def _where(finding: dict) -> str:
    try:
        location = finding["locations"][0]
        path = Path(next(iter(location["symbolic"]["key"].values()))["verbatim_path"]).name
        return f"{path}:{location['concrete']['location']['start_point']['row'] + 1}"
    except (KeyError, IndexError, StopIteration, TypeError):
        return "?"
