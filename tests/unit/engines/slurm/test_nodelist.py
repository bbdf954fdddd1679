"""Slurm host-list expansion: every form Slurm allocates, checked against Slurm's own parser when present."""

import shutil
import subprocess

import pytest

from runner.engines.slurm.nodelist import expand, first

CASES = {
    "n[1-2]": ["n1", "n2"],
    "r[1-2]-n[01-02]": ["r1-n01", "r1-n02", "r2-n01", "r2-n02"],
    "a1,b[3-5,7]": ["a1", "b3", "b4", "b5", "b7"],
    "node7": ["node7"],
    "gpu-a01,gpu-b02": ["gpu-a01", "gpu-b02"],
    "x[08-11]": ["x08", "x09", "x10", "x11"],
    "c[1,3]-ib,login": ["c1-ib", "c3-ib", "login"],
    "n[009-010]": ["n009", "n010"],
}


@pytest.mark.parametrize("spec,hosts", CASES.items())
def test_expand(spec, hosts):
    assert expand(spec) == hosts


@pytest.mark.parametrize("spec", [s for s in CASES if s != "c[1,3]-ib,login"])  # scontrol 22.05 rejects that one
def test_expand_agrees_with_scontrol(spec):
    if shutil.which("scontrol") is None:
        from engine_fixtures import engine_missing

        engine_missing("scontrol (Slurm client)")
    slurm = subprocess.run(["scontrol", "show", "hostnames", spec], capture_output=True, text=True, timeout=10)
    assert slurm.returncode == 0, slurm.stderr
    assert expand(spec) == slurm.stdout.split()


def test_first_is_the_first_host_of_the_allocation():
    assert first("r[1-2]-n[01-02]") == "r1-n01"
    assert first("a1,b[3-5,7]") == "a1"


@pytest.mark.parametrize("bad", ["n[1-2", "n1-2]", "n[2-1]", "n[a-b]", "n[[1]]", ""])
def test_malformed_lists_are_refused(bad):
    with pytest.raises(ValueError):
        first(bad)
