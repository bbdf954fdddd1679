"""The CI setup never replaces a slurm.conf it did not write (.ci/slurm-conf-owned.sh, called by
setup-engines.sh before it writes one)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
GUARD = ROOT / ".ci" / "slurm-conf-owned.sh"


def owned(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(GUARD), str(path)], capture_output=True, text=True, timeout=30)


def test_only_its_own_slurm_conf_may_be_rewritten(tmp_path):
    assert owned(tmp_path / "absent.conf").returncode == 0
    ours = tmp_path / "ours.conf"
    ours.write_text("# Written by .ci/setup-engines.sh: a 2-node test cluster on one machine.\nClusterName=primus-test\n")
    assert owned(ours).returncode == 0
    theirs = tmp_path / "theirs.conf"
    theirs.write_text("ClusterName=production\nSlurmctldHost=login1\n")
    refused = owned(theirs)
    assert refused.returncode == 1 and "refusing to overwrite" in refused.stderr
    assert theirs.read_text() == "ClusterName=production\nSlurmctldHost=login1\n"


def test_setup_engines_asks_the_guard_before_writing():
    text = (ROOT / ".ci" / "setup-engines.sh").read_text()
    guard, write = text.index("slurm-conf-owned.sh"), text.index('>"$SLURM_CONF"')
    assert guard < write
    assert "# Written by .ci/setup-engines.sh" in text  # the marker it writes, which the guard looks for


def test_this_machines_slurm_conf_is_the_scripts_own():
    conf = Path("/etc/slurm/slurm.conf")
    if not conf.exists():
        # CI always runs setup-engines.sh first, which writes it: its absence there is a failure.
        assert os.environ.get("CI") != "true", "CI ran setup-engines.sh, yet /etc/slurm/slurm.conf is missing"
        pytest.skip("no /etc/slurm/slurm.conf on this machine (bash .ci/setup-engines.sh writes one)")
    assert owned(conf).returncode == 0, "setup-engines.sh wrote this machine's slurm.conf: it must stay rewritable"
