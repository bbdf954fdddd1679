"""What the node agent asks of Slurm on its node (runner.engines.slurm.node): job ids, the plan file's
digest and engine, ``scontrol``'s answers read (fake Slurm tools on PATH), the master's address."""

from __future__ import annotations

import json

import pytest

from fake_slurm import prints, tools
from runner.engines.slurm import node
from runner.errors import EngineUnavailable, UsageError


@pytest.mark.parametrize("text, ok", [("1234", True), ("1234_5", True), ("0", True), ("1234_", False), ("_5", False),
                                      ("12a", False), ("12; rm -rf /", False), ("", False), ("1234\n", False)])
def test_a_job_id_is_a_number_or_an_array_task(text, ok):
    assert node.is_job_id(text) is ok


def test_require_job_id_refuses_anything_else_as_a_usage_error():
    assert node.require_job_id("77_1") == "77_1"
    with pytest.raises(UsageError, match=r"^'train-1' is not a Slurm job id$") as info:
        node.require_job_id("train-1")
    assert info.value.exit_code == 2


def test_a_job_variable_is_carried_under_the_runners_prefix_and_the_digest_is_sha256():
    assert node.carried("SLURM_CONF") == "PRIMUS_RUNNER_ENV_SLURM_CONF"
    assert node.plan_digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert node.plan_digest("abc ") != node.plan_digest("abc")


@pytest.mark.parametrize("line, fields", [
    ("JobId=12 JobName=primus train UserId=u(1000) NodeList=n[1-2]",
     {"JobId": "12", "JobName": "primus train", "UserId": "u(1000)", "NodeList": "n[1-2]"}),
    ("NodeName=n1 NodeAddr=10.0.0.7 State=IDLE+DRAIN\nsecond line ignored", {"NodeName": "n1", "NodeAddr": "10.0.0.7", "State": "IDLE+DRAIN"}),
    ("Command=/x/job.sbatch a=b TRES=cpu=2,mem=1G", {"Command": "/x/job.sbatch", "a": "b", "TRES": "cpu=2,mem=1G"}),
    ("", {}),
])
def test_scontrol_one_line_output_is_read_as_key_value(line, fields):
    assert node.parse_job(line) == fields


def test_hostnames_ask_scontrol_and_fall_back_to_the_runners_expansion(tmp_path, monkeypatch):
    args = tmp_path / "args"
    tools(tmp_path / "bin", monkeypatch, scontrol=f'echo "$@" > {args}\n' + prints("alpha\nbeta\n"))
    assert node.hostnames("n[1-2]") == ["alpha", "beta"]  # scontrol's answer, not the runner's expansion
    assert args.read_text().split() == ["show", "hostnames", "n[1-2]"]
    tools(tmp_path / "bin2", monkeypatch, scontrol=prints("", 1, "error"))
    assert node.hostnames("n[1-2]") == ["n1", "n2"]
    tools(tmp_path / "empty", monkeypatch)  # no scontrol at all
    assert node.hostnames("gpu[07-08]") == ["gpu07", "gpu08"]


def test_the_master_is_the_first_nodes_node_addr(tmp_path, monkeypatch):
    script = ('if [ "$2" = hostnames ]; then printf "n1\\nn2\\n"; '
              'else printf "NodeName=%s NodeAddr=127.0.0.1 NodeHostName=shared\\n" "$4"; fi')
    tools(tmp_path / "bin", monkeypatch, scontrol=script)
    assert node.node_field("n1", "NodeAddr") == "127.0.0.1"
    assert node.node_field("n1", "Absent") is None
    assert node.master_address("n[1-2]") == "127.0.0.1"


def test_without_scontrol_or_with_a_failing_one_a_node_has_no_field(tmp_path, monkeypatch):
    tools(tmp_path / "bin", monkeypatch, scontrol=prints("", 1, "Node n9 not found"))
    assert node.node_field("n9", "NodeAddr") is None
    tools(tmp_path / "none", monkeypatch)
    assert node.node_field("n1", "NodeAddr") is None


@pytest.mark.parametrize("addr, ip", [("127.0.0.1", "127.0.0.1"), ("localhost", "127.0.0.1"),
                                      ("no-such-host.invalid", "no-such-host.invalid")])
def test_an_address_is_given_as_an_ip_when_it_resolves(addr, ip):
    assert node.address_of(addr) == ip


def test_a_slurm_command_that_does_not_answer_in_time_is_engine_unavailable(tmp_path, monkeypatch):
    tools(tmp_path / "bin", monkeypatch, squeue="exec /bin/sleep 5")
    with pytest.raises(EngineUnavailable, match=r"squeue did not answer within 0 s"):
        node.run([str(tmp_path / "bin" / "squeue")], timeout=0.3)


def test_run_gives_the_commands_output_and_code(tmp_path, monkeypatch):
    tools(tmp_path / "bin", monkeypatch, sinfo=prints("up", 3, "warn"))
    done = node.run([str(tmp_path / "bin" / "sinfo")], timeout=10)
    assert (done.returncode, done.stdout, done.stderr) == (3, "up", "warn")


def test_the_planned_engine_is_the_plan_files(work):
    (work / "plan.json").write_text(json.dumps({"plan": {"container_engine": "podman"}}))
    assert node.planned_engine(str(work / "plan.json")) == "podman"


def test_an_unreadable_or_old_plan_file_means_auto(work):
    assert node.planned_engine(None) == "auto"
    assert node.planned_engine(work / "absent.json") == "auto"
    (work / "old.json").write_text(json.dumps({"plan": {"image": "x"}}))
    assert node.planned_engine(work / "old.json") == "auto"
    (work / "bad.json").write_text("{not json")
    assert node.planned_engine(work / "bad.json") == "auto"
