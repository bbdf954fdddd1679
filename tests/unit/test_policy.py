"""The env passthrough rules of the contract, on real config layers."""

from __future__ import annotations

from pathlib import Path

import pytest

from plan_factory import plan_from

from runner.config.envfile import EnvFile, load_env_file
from runner.plan import LaunchFlags
from runner.secrets import Secret

CANARY = "canary-policy-1d5e0c77aa"


def plan_for(work: Path, yaml_text: str, host: dict, env_file: EnvFile = EnvFile(None), flags=LaunchFlags(gpu="none")):
    return plan_from(work, yaml_text, host=host, env_file=env_file, flags=flags)


def decisions(planned):
    return {d.name: d for d in planned.plan.job.env}


BASE = "container:\n  options:\n    image: busybox\n    env: [FOO, UNSET_ONE, LIT=hello, HF_TOKEN]\n"


def test_allowlist_literal_unset_and_secret(work):
    planned = plan_for(work, BASE, {"FOO": "1", "HF_TOKEN": CANARY, "OTHER": "x"})
    assert not planned.problems
    d = decisions(planned)
    assert d["FOO"].forwarded and d["FOO"].value == "1" and d["FOO"].source == "env"
    assert d["LIT"].forwarded and d["LIT"].value == "hello" and d["LIT"].source == "literal"
    assert not d["UNSET_ONE"].forwarded and d["UNSET_ONE"].skip_reason == "unset"
    assert d["HF_TOKEN"].secret and isinstance(d["HF_TOKEN"].value, Secret)
    assert "OTHER" not in d
    assert "UNSET_ONE" in planned.unset
    assert planned.plan.job.public_env()["FOO"] == "1"
    assert "HF_TOKEN" not in planned.plan.job.public_env()


def test_prefix_forwards_but_never_a_secret(work):
    host = {"NCCL_DEBUG": "INFO", "PRIMUS_X_TOKEN": CANARY, "PRIMUS_LEVEL": "3", "RCCL_API_KEY": CANARY}
    planned = plan_for(work, BASE, host)
    d = decisions(planned)
    assert d["NCCL_DEBUG"].forwarded and d["NCCL_DEBUG"].reason == "prefix NCCL_"
    assert d["PRIMUS_LEVEL"].forwarded
    for name in ("PRIMUS_X_TOKEN", "RCCL_API_KEY"):
        assert not d[name].forwarded and "secret" in d[name].skip_reason
    assert CANARY not in str(planned.plan.to_dict())


def test_secret_listed_by_name_is_forwarded_even_with_prefix(work):
    planned = plan_for(work, BASE.replace("HF_TOKEN]", "HF_TOKEN, PRIMUS_X_TOKEN]"), {"PRIMUS_X_TOKEN": CANARY})
    d = decisions(planned)
    assert d["PRIMUS_X_TOKEN"].forwarded and d["PRIMUS_X_TOKEN"].secret


def test_secret_literal_in_yaml_is_refused_with_line(work):
    planned = plan_for(work, "container:\n  options:\n    env:\n      - OK\n      - WANDB_API_KEY=abc123\n", {})
    (problem,) = planned.problems
    assert problem.where == f"{work / '.primus.yaml'}:5"
    assert "WANDB_API_KEY" in problem.message and "abc123" not in str(problem)


def test_pattern_secret_literal_is_refused(work):
    planned = plan_for(work, "container:\n  options:\n    env: [MY_SERVICE_PASSWORD=hunter22]\n", {})
    assert len(planned.problems) == 1 and "MY_SERVICE_PASSWORD" in planned.problems[0].message


def test_denied_name_in_allowlist_is_an_error(work):
    planned = plan_for(work, "container:\n  options:\n    env: [LD_PRELOAD]\n", {"LD_PRELOAD": "/x.so"})
    assert "deny" in planned.problems[0].message
    assert planned.problems[0].where.endswith(":3")


@pytest.mark.parametrize("bad", ["1BAD", "A-B", "WITH SPACE", ""])
def test_invalid_env_names_are_refused(work, bad):
    planned = plan_for(work, f"container:\n  options:\n    env: ['{bad}']\n", {})
    assert any("invalid environment variable name" in p.message for p in planned.problems)


def test_missing_required_names_are_all_listed_at_once(work):
    planned = plan_for(work, "passthrough:\n  required: [HF_TOKEN, NEEDED_A, NEEDED_B]\n", {"NEEDED_A": "x"})
    (problem,) = planned.problems
    assert "HF_TOKEN" in problem.message and "NEEDED_B" in problem.message and "NEEDED_A" not in problem.message


def test_process_env_wins_over_env_file(work):
    env_path = work / "vals.env"
    env_path.write_text(f"FOO=from-file\nexport HF_TOKEN={CANARY}\n")
    env_path.chmod(0o600)
    env_file = load_env_file(str(env_path))
    planned = plan_for(work, BASE, {"FOO": "from-env"}, env_file)
    d = decisions(planned)
    assert d["FOO"].value == "from-env"
    assert d["HF_TOKEN"].forwarded and d["HF_TOKEN"].source.startswith("env-file")
    assert d["HF_TOKEN"].value.reveal() == CANARY


def test_env_file_warnings_for_mode_and_duplicates(work):
    env_path = work / "loose.env"
    env_path.write_text("A=1\nA=2\n")
    env_path.chmod(0o644)
    env_file = load_env_file(str(env_path))
    assert env_file.values["A"] == "2"
    assert any("readable by group/others" in w for w in env_file.warnings)
    assert any("set again" in w for w in env_file.warnings)


def test_duplicates_across_layers_are_merged(work):
    extra = work / "extra.yaml"
    extra.write_text("container:\n  options:\n    env: [FOO, FOO, LIT=world]\n")
    planned = plan_from(work, BASE, host={"FOO": "1"}, flags=LaunchFlags(gpu="none"), extra=str(extra))
    names = [d.name for d in planned.plan.job.env]
    assert names.count("FOO") == 1 and names.count("LIT") == 1
    assert decisions(planned)["LIT"].value == "world"


def test_gpu_flavors_choose_devices(work):
    rocm = plan_for(work, BASE, {}, flags=LaunchFlags(gpu="rocm")).plan
    assert "/dev/kfd" in rocm.container.devices and "/dev/dri" in rocm.container.devices and "video" in rocm.container.group_add
    cuda = plan_for(work, BASE, {}, flags=LaunchFlags(gpu="cuda")).plan
    assert cuda.container.gpu_request == "nvidia" and "/dev/kfd" not in cuda.container.devices
    none = plan_for(work, BASE, {}, flags=LaunchFlags(gpu="none")).plan
    assert not any(d in none.container.devices for d in ("/dev/kfd", "/dev/dri")) and none.container.gpu_request is None
    assert "video" not in none.container.group_add and "video" not in cuda.container.group_add


def test_group_add_on_the_command_line_is_passed_as_given(work):
    """`container --group-add render`: kept under ROCm (beside the flavor's video) and under any flavor;
    a file's ROCm group is still dropped under cuda and none (images without a GPU stack lack it)."""
    rocm = plan_for(work, BASE, {}, flags=LaunchFlags(gpu="rocm", group_add=("render",))).plan
    assert {"video", "render"} <= set(rocm.container.group_add)
    none = plan_for(work, BASE, {}, flags=LaunchFlags(gpu="none", group_add=("render",))).plan
    assert "render" in none.container.group_add
    (work / "groups.yaml").write_text("container:\n  options:\n    group-add: [render]\n")
    from_file = plan_from(work, BASE, flags=LaunchFlags(gpu="rocm"), extra=str(work / "groups.yaml")).plan
    assert "render" in from_file.container.group_add


def test_built_in_defaults_are_least_privilege(work):
    """No privileged mode or raised ulimit unless a config asks (many hosts refuse both)."""
    plan = plan_for(work, BASE, {}, flags=LaunchFlags(gpu="rocm")).plan
    assert plan.container.privileged is False and plan.container.ulimits == ()
    assert plan.container.ipc == "host" and plan.container.network == "host"
    assert set(plan.container.cap_add) == {"SYS_PTRACE", "CAP_SYS_ADMIN"} and plan.container.security_opt == ("seccomp=unconfined",)
    launcher = plan_for(work, BASE + '    privileged: "true"\n    ulimit: "nofile=1048576:1048576"\n', {}).plan
    assert launcher.container.privileged is True and launcher.container.ulimits == ("nofile=1048576:1048576",)
