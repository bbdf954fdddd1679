"""Where a Slurm job's files go when ``slurm.output_dir`` is unset: the run's own ``slurm/`` under the
state directory when the nodes see it, else ``./primus-runs/`` with a notice naming the path and why.

``scontrol`` here is a stand-in script on PATH answering ``show node -o`` as slurmctld would: what is
under test is the runner's decision from that answer, not Slurm."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from runner.engines.slurm import shared_fs


def _scontrol(bin_dir: Path, hosts: dict[str, str]) -> None:
    bin_dir.mkdir(exist_ok=True)
    lines = "".join(f"NodeName={n} Arch=x86_64 CoresPerSocket=1 NodeAddr=10.0.0.{i} NodeHostName={h} State=IDLE\n"
                    for i, (n, h) in enumerate(hosts.items(), 1))
    script = bin_dir / "scontrol"
    script.write_text(f"#!/bin/sh\n[ \"$1 $2 $3\" = 'show node -o' ] || exit 1\nprintf '%s' '{lines}'\n")
    script.chmod(0o755)


@pytest.fixture()
def launch(begin):
    """begin() of a Slurm launch (``conftest.begin``): its run and what it printed."""

    def run_slurm(capsys):
        from runner.engines.slurm.engine import SlurmEngine

        run, _, _ = begin(SlurmEngine())  # its job directory and the nodes' view are the engine's facts
        run._ended = True  # nothing launched: no record at exit
        return run, capsys.readouterr().err

    return run_slurm


def test_nodes_on_this_host_see_the_state_directory(tmp_path, launch, capsys):
    _scontrol(tmp_path / "bin", {"n1": socket.gethostname(), "n2": socket.gethostname()})
    run, err = launch(capsys)
    assert run.job_dir == tmp_path / "state" / "primus-runner" / "runs" / run.id / "slurm"
    tb = [o for o in run.outputs if o.path == "/tmp/tb"]
    assert tb and tb[0].host.startswith(str(run.job_dir / "outputs"))  # the tracker outputs with the job's files
    assert not (tmp_path / "project" / "primus-runs").exists() and "primus-runs" not in err


def test_a_local_state_directory_with_nodes_elsewhere_falls_back_with_a_notice(tmp_path, launch, capsys):
    _scontrol(tmp_path / "bin", {"n1": socket.gethostname(), "gpu-node-7": "gpu-node-7.cluster"})
    if shared_fs.fs_type(tmp_path) in shared_fs.NETWORK_FS:
        pytest.skip("this tmp_path is on a network file system: the nodes would see it")
    run, err = launch(capsys)
    moved = tmp_path / "project" / "primus-runs" / f"{run.id}-{run.plan.job.name}"
    assert run.job_dir == moved
    assert str(moved) in err and str(tmp_path / "state" / "primus-runner") in err and "gpu-node-7" in err
    assert "slurm.output_dir" in err
    mounts = {m.target: m.source for m in run.plan.container.mounts}
    assert mounts["/tmp/tb"].startswith(str(moved / "outputs"))  # the outputs moved with the job's files


def test_the_file_system_type_comes_from_the_mount_table(tmp_path):
    assert shared_fs.fs_type(Path("/proc/self")) == "proc"
    assert shared_fs.fs_type(tmp_path / "not" / "there" / "yet") == shared_fs.fs_type(tmp_path)
