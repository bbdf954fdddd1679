"""Primus's own launcher test suite (../shared/fixtures/primus-launcher/tests/runner), in its own
harness, against the bash launcher and against the runner put in its place: every assertion the
launcher passes must pass with the runner too.

The fixture is laid out twice: as it is, and with `runner/primus-cli` replaced by a shim that runs
this tree's runner. The suite's scripts that call `runner/primus-cli` itself (the others call the
launcher's mode scripts directly, which the shim does not replace) run in each; the harness prints
one `✓ NAME` or `✗ NAME` line per assertion, which is what is compared."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ux_helpers import REPO

FIXTURE = REPO.parent / "shared" / "fixtures" / "primus-launcher"
SHIM = f'#!/bin/bash\nexec {sys.executable} -P -m runner "$@"\n'
ANSI = re.compile(r"\x1b\[[0-9;]*m")
RESULT = re.compile(r"^(?P<mark>[✓✗]) (?P<name>.+)$")
TOTAL = re.compile(r"^\s*Total:\s*(\d+)$")


def _scripts_calling_the_launcher() -> list[str]:
    """The suite's scripts that run `runner/primus-cli` (not only its primus-cli-*.sh scripts)."""
    suite = FIXTURE / "tests" / "runner"
    if not suite.is_dir():
        pytest.fail(f"Primus's launcher suite is missing at {suite} (../shared/fixtures/primus-launcher)")
    return sorted(p.name for p in suite.glob("*.sh") if 'runner/primus-cli"' in p.read_text())


def _layout(root: Path, with_runner: bool) -> Path:
    checkout = root / ("runner-in-place" if with_runner else "bash-launcher") / "Primus"
    shutil.copytree(FIXTURE, checkout)
    if with_runner:
        (checkout / "runner" / "primus-cli").write_text(SHIM)
    return checkout


def _results(checkout: Path, script: str, home: Path) -> dict[tuple[str, int], bool]:
    """Each assertion of one suite script, as its harness printed it: (name, occurrence) -> passed."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
           "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run(["bash", f"tests/runner/{script}"], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=600)
    lines = [ANSI.sub("", line) for line in done.stdout.splitlines()]
    summary = lines.index("Test Summary:") if "Test Summary:" in lines else len(lines)  # its last ✓/✗ line is the verdict
    found: dict[tuple[str, int], bool] = {}
    for line in lines[:summary]:
        match = RESULT.match(line)
        if match:
            name = match["name"].strip()
            seen = sum(1 for key in found if key[0] == name)
            found[(name, seen)] = match["mark"] == "✓"
    totals = [int(m[1]) for m in map(TOTAL.match, lines) if m]
    assert totals == [len(found)], f"{script}: the harness's summary does not match its lines:\n{done.stdout}{done.stderr}"
    return found


def test_every_assertion_the_launcher_passes_passes_with_the_runner(tmp_path):
    scripts = _scripts_calling_the_launcher()
    assert scripts, "no script of the suite calls runner/primus-cli"
    bash_checkout, runner_checkout = _layout(tmp_path, False), _layout(tmp_path, True)
    home = tmp_path / "home"
    home.mkdir()
    lost, passed_by_bash = [], 0
    for script in scripts:
        by_bash = _results(bash_checkout, script, home)
        by_runner = _results(runner_checkout, script, home)
        passed_by_bash += sum(by_bash.values())
        lost += [f"{script}: {name}" for (name, _), ok in by_bash.items() if ok and not by_runner.get((name, _), False)]
    assert passed_by_bash, "the bash launcher passed no assertion: the suite did not run"
    assert not lost, (f"{len(lost)} of the {passed_by_bash} assertions the bash launcher passes fail with the runner:\n  "
                      + "\n  ".join(lost))
