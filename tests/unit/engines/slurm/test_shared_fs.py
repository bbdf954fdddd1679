"""Whether the Slurm nodes see a path of this host: a network file system, or every slurmd on this host."""

from __future__ import annotations

import socket

import pytest

from fake_slurm import prints, tools
from runner.engines.slurm import shared_fs


def nodes(**hosts: str) -> str:
    return "".join(f"NodeName={n} Arch=x86_64 NodeHostName={h} State=IDLE\n" for n, h in hosts.items())


@pytest.fixture
def local(tmp_path):
    if shared_fs.fs_type(tmp_path) in shared_fs.NETWORK_FS:
        pytest.fail(f"{tmp_path} is on a network file system: these tests need a local one")
    return tmp_path


def test_a_network_file_system_is_seen_without_asking_slurm(tmp_path, monkeypatch):
    tools(tmp_path / "bin", monkeypatch)  # no scontrol at all
    monkeypatch.setattr(shared_fs, "fs_type", lambda path: "lustre")
    assert shared_fs.nodes_see(tmp_path) == (True, "lustre, a network file system")


def test_nodes_on_this_host_see_a_local_path(local, monkeypatch):
    here = socket.gethostname()
    tools(local / "bin", monkeypatch, scontrol=prints(nodes(n1=here, n2="localhost")))
    assert shared_fs.nodes_see(local) == (True, "every node runs on this host")


def test_nodes_elsewhere_do_not_see_a_local_path_and_are_named(local, monkeypatch):
    kind = shared_fs.fs_type(local)
    tools(local / "bin", monkeypatch, scontrol=prints(nodes(n1=socket.gethostname(), gpu7="gpu7.cluster")))
    assert shared_fs.nodes_see(local) == (False, f"it is on {kind} local to this host, and node gpu7 runs elsewhere")
    many = nodes(**{f"g{i}": f"g{i}.cluster" for i in range(5)})
    tools(local / "bin", monkeypatch, scontrol=prints(many))
    assert shared_fs.nodes_see(local)[1].endswith("nodes g0, g1, g2 … run elsewhere")


def test_a_node_without_a_host_name_is_its_own_host(tmp_path, monkeypatch):
    tools(tmp_path / "bin", monkeypatch, scontrol=prints("NodeName=n1 State=IDLE\nNodeName=n2 NodeHostName=h2\nbogus\n"))
    assert shared_fs.node_hosts() == {"n1": "n1", "n2": "h2"}


@pytest.mark.parametrize("answers", [{}, {"scontrol": prints("", 1, "Unable to contact slurm controller")}])
def test_without_an_answer_from_scontrol_it_cannot_be_told(local, monkeypatch, answers):
    tools(local / "bin", monkeypatch, **answers)
    assert shared_fs.node_hosts() is None
    assert shared_fs.nodes_see(local) == (None, "scontrol does not answer")
