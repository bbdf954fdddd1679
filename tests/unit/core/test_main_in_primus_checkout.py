"""`python3 -m runner` inside a Primus checkout, whose own runner/ shadows the package: one message
naming the shadow and what to run instead, never an ImportError traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import runner

STANDIN = Path(__file__).resolve().parents[2] / "fixtures" / "primus-standin" / "standin.sh"  # both launchers' stand-in


@pytest.mark.parametrize("package", [False, True], ids=["scripts-only", "with-__init__"])
def test_python_m_runner_in_a_primus_checkout_says_what_to_run(tmp_path, package):
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "primus-cli-direct.sh").write_text(STANDIN.read_text())
    if package:
        (tmp_path / "runner" / "__init__.py").write_text("")
    result = subprocess.run([sys.executable, "-m", "runner", "--version"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in result.stderr, result.stderr
    editable = "site-packages" not in str(Path(runner.__file__).resolve())  # this checkout, installed with -e (as CI does)
    if editable or result.returncode:
        assert result.returncode == 2, result.stderr
        assert str(tmp_path / "runner") in result.stderr and "primus-runner" in result.stderr and "-P -m runner" in result.stderr
    works = subprocess.run([sys.executable, "-P", "-m", "runner", "--version"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert works.returncode == 0 and works.stdout.startswith("primus-runner "), works.stderr
