"""Primus's bare-metal guide with the real launcher beside the runner: a venv on PATH, then
`direct -- benchmark gemm`. The real `runner/primus-cli-direct.sh` (../shared/fixtures/primus-launcher)
must reach the venv's `torchrun` (a stand-in that prints its arguments and the environment NAMES it
received) with the runner as with `runner/primus-cli`, here and on both nodes of the test cluster; the
names it receives are the launcher's, less the secrets the policy does not forward."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine_fixtures import SLURM_PARTITION, assert_no_leak
from ux_helpers import REPO

LAUNCHER = REPO.parent / "shared" / "fixtures" / "primus-launcher" / "runner"
RUNNER = [sys.executable, "-P", "-m", "runner", "--trust-project"]
TORCHRUN = """#!/bin/sh
echo "torchrun-standin: $0"
for a in "$@"; do echo "torchrun-arg: <$a>"; done
env | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/torchrun-envname: \\1/p' | sort
echo "torchrun-secretlen: HF_TOKEN=${#HF_TOKEN}"
"""
WITHHELD_CANARY = "canary-withheld-api-key-5b1e0c"


class BareMetal:
    """A Primus checkout (the real launcher's runner/), a venv whose bin/ holds the torchrun stand-in,
    a ROCm root and HOME, and the user's shell environment that has them all."""

    def __init__(self, root: Path, canary: dict[str, str]):
        if not (LAUNCHER / "primus-cli-direct.sh").is_file():
            pytest.fail(f"the real launcher is missing at {LAUNCHER} (../shared/fixtures/primus-launcher)")
        self.checkout = root / "Primus"
        shutil.copytree(LAUNCHER, self.checkout / "runner")
        self.venv = root / "venv"
        (self.venv / "bin").mkdir(parents=True)
        torchrun = self.venv / "bin" / "torchrun"
        torchrun.write_text(TORCHRUN)
        torchrun.chmod(0o755)
        (root / "rocm" / "lib").mkdir(parents=True)
        (root / "home").mkdir()
        self.canary = canary
        self.env = {
            "PATH": f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(root / "home"), "LANG": "C.UTF-8",
            "VIRTUAL_ENV": str(self.venv), "ROCM_HOME": str(root / "rocm"), "LD_LIBRARY_PATH": str(root / "rocm" / "lib"),
            "CONDA_PREFIX": str(root / "conda"), "LOADEDMODULES": "rocm/6.4", "MODULEPATH": "/etc/modulefiles",
            "HF_TOKEN": canary["HF_TOKEN"],  # allowlisted by the defaults: forwarded, a secret
            "OTHER_API_KEY": WITHHELD_CANARY,  # a secret by its name that nothing forwards: withheld
            "XDG_STATE_HOME": str(root / "home" / ".local" / "state"), "NO_COLOR": "1",
        }
        if os.environ.get("PYTHONPATH"):
            self.env["PYTHONPATH"] = os.environ["PYTHONPATH"]  # the runner under test (the launcher gets it too)

    def run(self, argv: list[str], extra: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=self.checkout, env={**self.env, **(extra or {})}, capture_output=True, text=True,
                              timeout=timeout)


def received(output: str, rank: str = "") -> dict:
    """What the torchrun stand-in printed (on Slurm, the lines of one rank: ``[0] …``)."""
    got = {"path": None, "args": [], "names": set(), "secretlen": None}
    for line in output.splitlines():
        m = re.match(r"^(?:\[(\d+)\] )?torchrun-(standin|arg|envname|secretlen): (.*)$", line)
        if not m or (m.group(1) or "") != rank:
            continue
        kind, value = m.group(2), m.group(3)
        if kind == "standin":
            got["path"] = value
        elif kind == "arg":
            got["args"].append(value[1:-1])
        elif kind == "envname":
            got["names"].add(value)
        else:
            got["secretlen"] = value
    return got


@pytest.fixture
def bare(tmp_path, canary) -> BareMetal:
    return BareMetal(tmp_path, canary)


def test_direct_reaches_the_venvs_torchrun_with_the_launchers_environment(bare):
    launcher = bare.run(["bash", "runner/primus-cli", "direct", "--", "benchmark", "gemm"])
    assert launcher.returncode == 0, launcher.stdout[-2000:] + launcher.stderr[-2000:]
    runner = bare.run([*RUNNER, "direct", "--", "benchmark", "gemm"])
    assert runner.returncode == 0, runner.stdout[-2000:] + runner.stderr[-2000:]
    theirs, ours = received(launcher.stdout), received(runner.stdout)
    assert ours["path"] == theirs["path"] == str(bare.venv / "bin" / "torchrun")
    assert ours["args"] == theirs["args"] and ours["args"][-2:] == ["benchmark", "gemm"]
    assert "OTHER_API_KEY" in theirs["names"]  # the launcher hands every secret over
    assert theirs["names"] - ours["names"] == {"OTHER_API_KEY"}, theirs["names"] ^ ours["names"]
    assert ours["names"] - theirs["names"] == set(), ours["names"] - theirs["names"]
    assert {"HOME", "VIRTUAL_ENV", "ROCM_HOME", "LD_LIBRARY_PATH", "CONDA_PREFIX", "LOADEDMODULES"} <= ours["names"]
    assert ours["secretlen"] == f"HF_TOKEN={len(bare.canary['HF_TOKEN'])}"
    assert "HOME: unbound variable" not in runner.stderr
    out = (runner.stdout + runner.stderr).encode()
    assert WITHHELD_CANARY.encode() not in out
    assert_no_leak(out, bare.canary, "direct")


def test_direct_help_reaches_primus_unchanged(bare):
    """`direct -- --help`: Primus's own help (here, the stand-in's arguments), not the direct launcher's usage."""
    runner = bare.run([*RUNNER, "direct", "--", "--help"])
    launcher = bare.run(["bash", "runner/primus-cli", "direct", "--", "--help"])
    assert runner.returncode == launcher.returncode == 0, runner.stderr[-2000:]
    assert received(runner.stdout)["args"][-1:] == received(launcher.stdout)["args"][-1:] == ["--help"]
    assert "Primus Direct Launcher" not in runner.stdout


def test_plan_lists_what_direct_withholds(bare):
    planned = bare.run([*RUNNER, "--dry-run", "direct", "--", "benchmark", "gemm"])
    assert planned.returncode == 0, planned.stderr
    assert re.search(r"^\s+OTHER_API_KEY\s+\(withheld: a secret by its name", planned.stdout, re.M), planned.stdout
    assert WITHHELD_CANARY not in planned.stdout + planned.stderr and "torchrun-standin" not in planned.stdout


def test_clean_env_gives_the_direct_script_only_the_forwarded_names(bare, tmp_path):
    (tmp_path / "clean.yaml").write_text("direct:\n  clean_env: true\n")
    runner = bare.run([*RUNNER, "--config", str(tmp_path / "clean.yaml"), "direct", "--", "benchmark", "gemm"])
    # only the forwarded names and a default PATH: the direct script finds no HOME (its config.sh stops there)
    assert runner.returncode == 1 and "HOME: unbound variable" in runner.stderr, runner.stderr[-2000:]
    assert "torchrun-standin" not in runner.stdout


@pytest.mark.slurm
def test_slurm_direct_reaches_the_venvs_torchrun_on_both_nodes(bare, tmp_path, slurm_cluster):
    """`slurm srun -N 2 -- direct -- benchmark gemm`: every node's direct script gets the user's
    environment (the venv, HOME, ROCm) as srun gives the launcher's, never the withheld secret."""
    (tmp_path / "slurm.yaml").write_text(f'slurm:\n  partition: {SLURM_PARTITION}\n  time: "5"\n')
    runner = bare.run([*RUNNER, "--config", str(tmp_path / "slurm.yaml"), "slurm", "srun", "-N", "2", "--gpus-per-node=1", "--",
                       "direct", "--", "benchmark", "gemm"], timeout=300)
    assert runner.returncode == 0, runner.stdout[-3000:] + runner.stderr[-3000:]
    for rank in ("0", "1"):
        got = received(runner.stdout, rank)
        assert got["path"] == str(bare.venv / "bin" / "torchrun"), runner.stdout[-3000:]
        assert {"HOME", "VIRTUAL_ENV", "ROCM_HOME", "LD_LIBRARY_PATH", "SLURM_JOB_ID"} <= got["names"]
        assert "OTHER_API_KEY" not in got["names"] and not any(n.startswith("PRIMUS_RUNNER_") for n in got["names"])
        assert got["args"][got["args"].index("--node_rank") + 1] == rank and got["args"][-2:] == ["benchmark", "gemm"]
    assert WITHHELD_CANARY not in runner.stdout + runner.stderr
    assert_no_leak((runner.stdout + runner.stderr).encode(), bare.canary, "slurm direct")
