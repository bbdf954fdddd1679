"""The plan is a neutral job spec plus a container spec: each field lives in one of them, the plan's
JSON and plan file stay one flat document in the order they always had, a record rebuilds the same
plan, and an engine without a container is given the job alone and refuses, from the type, every
launch flag that sets a container field."""

from __future__ import annotations

import dataclasses
from dataclasses import fields, replace

import pytest

from plan_factory import plan_from_layer

from runner import launch_plan
from runner.engines.process import ProcessEngine, ProcessRequest
from runner.errors import UsageError
from runner.gpus import Gpu
from runner.launch_plan import RECORD_ORDER, ContainerSpec, JobSpec, LaunchPlan, Mount
from runner.options import LaunchFlags
from runner.secrets import Secret

CANARY = "launch-plan-canary-7c2e91"
LAYER = {"container": {"gpu": "none", "stop_timeout": 5, "options": {
    "image": "primus-test/busybox:latest", "ulimit": ["nofile=1024:2048"], "cap-add": ["SYS_PTRACE"], "ipc": "host",
    "shm-size": "1g", "memory": "2g", "cpus": 1.5, "env": ["HF_TOKEN", "LIT=one"], "workdir": "/w"}}}


def _plan() -> LaunchPlan:
    _, planned = plan_from_layer(LAYER, ["python", "train.py"], host={"HF_TOKEN": CANARY}, flags=LaunchFlags(name="job-1"))
    plan = planned.require()
    gpu = Gpu(vendor="amd", index=0, uuid="GPU-1", pci="0000:01:00.0", render="/dev/dri/renderD128", minor=128, node=2)
    return replace(plan, job=replace(plan.job, gpus=(gpu,)),
                   container=replace(plan.container, mounts=(Mount("/data", "/data", "ro"),), run_options=(("--init", None),)))


def test_every_field_is_in_one_spec_and_in_the_flat_order_once():
    job, container = [f.name for f in fields(JobSpec)], [f.name for f in fields(ContainerSpec)]
    assert not set(job) & set(container)
    assert sorted(RECORD_ORDER) == sorted(set(job + container) - {"env", "trackers"})
    assert len(RECORD_ORDER) == len(set(RECORD_ORDER))


def test_the_plan_json_is_one_flat_document_in_its_old_order_and_names_only():
    doc = _plan().to_dict()
    assert list(doc) == [
        "image", "command", "name", "gpu", "mounts", "devices", "gpu_request", "gpus", "gpu_select", "host_root", "cap_add",
        "group_add", "security_opt", "ulimits", "privileged", "hostname", "run_options", "ipc", "network", "user", "workdir",
        "shm_size", "memory", "cpus", "secrets_via", "pull", "container_engine", "labels", "entrypoint", "platform",
        "inherit_env", "secret_rules", "notices", "config_files", "env", "trackers", "secrets", "skipped", "env_sources"]
    assert doc["env"]["HF_TOKEN"] == "***" and CANARY not in repr(doc) and CANARY not in repr(_plan().record())


def test_a_record_rebuilds_the_same_plan_with_the_values_given():
    plan = _plan()
    values = {d.name: d.value for d in plan.job.forwarded}
    rebuilt = LaunchPlan.from_record(plan.record(), values)
    assert rebuilt.container == plan.container
    assert replace(rebuilt.job, env=()) == replace(plan.job, env=())  # the variables: names with the values given
    assert rebuilt.job.secret_env()["HF_TOKEN"].reveal() == CANARY and rebuilt.job.public_env() == plan.job.public_env()
    assert rebuilt.record() == plan.record()


def test_a_host_process_request_is_built_from_the_job_alone():
    plan = _plan()
    other = ContainerSpec(image="elsewhere/other:2", mounts=(Mount("/srv", "/srv"),), memory="64g", privileged=True)
    engine = ProcessEngine()
    request = engine.request(plan, None)
    assert isinstance(request, ProcessRequest) and request.job is plan.job
    assert engine.request(replace(plan, container=other), None) == request  # no container field reaches it
    assert {f.name for f in fields(ProcessRequest)}.isdisjoint({"plan", "container"})
    assert request.with_run_env({"RUN": "1"}).job.public_env()["RUN"] == "1"


def _value(flag: dataclasses.Field):
    kind = str(flag.type)
    return True if "bool" in kind else ("x",) if "tuple" in kind else "x"


CONTAINER_FLAGS = [f for f in fields(LaunchFlags) if f.name in ContainerSpec.flag_names()]


@pytest.mark.parametrize("flag", CONTAINER_FLAGS, ids=lambda f: f.name)
def test_the_process_engine_refuses_each_flag_that_sets_a_container_field(flag):
    with pytest.raises(UsageError) as refused:
        ProcessEngine().refuse_unhonoured(LaunchFlags(**{flag.name: _value(flag)}))
    assert refused.value.exit_code == 2 and "the process engine cannot honour" in refused.value.message


def test_the_job_flags_are_carried_out_and_the_refusal_follows_the_container_type(monkeypatch):
    """Every launch flag is a job flag or a container flag; the process engine takes the job's (but
    --gpus: it chooses no GPUs). A container field added to the type is refused with no other edit."""
    job_flags = [f for f in fields(LaunchFlags) if f not in CONTAINER_FLAGS]
    assert {f.name for f in job_flags} == {"env", "gpu", "gpus", "name", "workdir", "host_process"}
    engine = ProcessEngine()
    engine.refuse_unhonoured(LaunchFlags(env=("A",), gpu="cuda", name="n", workdir="/w", host_process=True))
    with pytest.raises(UsageError, match="cannot honour --gpus"):
        engine.refuse_unhonoured(LaunchFlags(gpus="2"))
    wider = dataclasses.make_dataclass("ContainerSpec", [("workdir", "str | None", None)], bases=(ContainerSpec,), frozen=True)
    monkeypatch.setattr(launch_plan, "ContainerSpec", wider)  # a container with a working directory of its own
    with pytest.raises(UsageError, match="cannot honour --workdir"):
        engine.refuse_unhonoured(LaunchFlags(workdir="/w"))


def test_a_container_engine_refuses_no_launch_flag():
    from runner.engines.docker import DockerEngine

    DockerEngine().refuse_unhonoured(LaunchFlags(**{f.name: _value(f) for f in CONTAINER_FLAGS}, gpus="2"))


def test_a_secret_value_never_enters_a_record():
    plan = _plan().with_env({"COMPUTED": "1"})
    assert isinstance(plan.job.secret_env()["HF_TOKEN"], Secret)
    assert {"name": "HF_TOKEN", "secret": True, "reason": "allowlist"} in plan.record()["env"]
    assert CANARY not in repr(plan.record()) and plan.job.public_env()["COMPUTED"] == "1"
