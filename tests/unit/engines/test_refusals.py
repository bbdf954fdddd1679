"""What a launch on this host refuses before anything exists (runner.engines.refusals): each missing
device blamed on what asked for it, the process engine's working directory and program; ``up``
stops on them with exit 2 and those words, before it asks the engine for anything."""

from __future__ import annotations

import pytest

from loopback_servers import Server
from plan_factory import launch_flags
from runner.config import load_config
from runner.config.envfile import EnvFile
from runner.engines.process import ProcessRequest
from runner.engines.refusals import host_program, missing_devices, not_installed
from runner.plan import build_plan

HOST = {"PATH": "/usr/bin:/bin"}


def _planned(work, yaml_text: str, flags=(), command=("true",)):
    """(plan, config) as ``up`` builds them from the project file and the command line."""
    (work / ".primus.yaml").write_text(yaml_text)
    parsed = launch_flags(flags)
    config = load_config(None, parsed.config_layer() or None, project_dir=work, trust_project=True)
    return build_plan(config, list(command), dict(HOST), EnvFile(None, {}), parsed).require(), config


PROJECT = "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n"


def _texts(problems):
    return [(p.message, p.where, p.hint) for p in problems]


def test_a_device_given_on_the_command_line_is_blamed_on_device(work):
    plan, config = _planned(work, PROJECT, ["--device", "/dev/primus-absent-0", "--device", "/dev/null"])
    assert _texts(missing_devices(plan, config)) == [(
        "device /dev/primus-absent-0 (--device) does not exist on this host", None,
        "fix the path or remove the entry (primus-runner plan --verbose shows where each device comes from)")]


def test_a_device_from_the_project_file_is_blamed_on_its_line(work):
    plan, config = _planned(work, PROJECT + "    device: [/dev/null, /dev/primus-absent-1:/dev/x:rw]\n")
    [problem] = missing_devices(plan, config)
    where = f"{work / '.primus.yaml'}:5"
    assert problem.message == f"device /dev/primus-absent-1 ({where}) does not exist on this host"
    assert problem.where == where


def test_a_flavors_own_device_is_blamed_on_the_gpu_flavor(work, monkeypatch):
    monkeypatch.setattr("runner.engines.refusals.os.path.exists", lambda path: path != "/dev/kfd")  # this host: no ROCm driver
    plan, config = _planned(work, PROJECT.replace("gpu: none", "gpu: rocm"))
    assert [p.message for p in missing_devices(plan, config)] == ["device /dev/kfd (needed by --gpu rocm) does not exist on this host"]
    assert missing_devices(plan, config)[0].hint == "install the GPU driver, or run with --gpu none / the other flavor"


def test_present_devices_and_cdi_names_are_not_refused(work):
    plan, config = _planned(work, PROJECT, ["--device", "/dev/null", "--device", "nvidia.com/gpu=all"])
    assert missing_devices(plan, config) == []


@pytest.mark.parametrize("flags, command, expected", [
    (["--workdir", "/primus-absent-wd"], ("true",),
     ["the working directory /primus-absent-wd (--workdir) does not exist on this host"]),
    ([], ("primus-absent-program",), ["primus-absent-program is not installed on this host"]),
    (["--workdir", "/primus-absent-wd"], ("primus-absent-program",),
     ["the working directory /primus-absent-wd (--workdir) does not exist on this host", "primus-absent-program is not installed on this host"]),
    ([], ("true",), []),
])
def test_the_process_engine_needs_its_working_directory_and_program(work, flags, command, expected):
    plan, config = _planned(work, "{}\n", ["--engine", "process", *flags], command)
    assert [p.message for p in host_program(ProcessRequest.of(plan.job, HOST), config)] == expected


def test_a_working_directory_from_the_file_is_blamed_on_its_line(work):
    plan, config = _planned(work, "container:\n  options:\n    workdir: /primus-absent-wd\n", ["--engine", "process"])
    [problem] = host_program(ProcessRequest.of(plan.job, HOST), config)
    assert problem.message == "the working directory /primus-absent-wd (workdir) does not exist on this host"
    assert problem.where == f"{work / '.primus.yaml'}:3"


def test_not_installed_names_the_program_and_how_to_get_it():
    problem = not_installed("primus")
    assert problem.message == "primus is not installed on this host"
    assert "PRIMUS_PATH" in problem.hint and "direct.entry" in problem.hint


def _daemon(server, request):
    if request["path"] == "/_ping":
        return 200, {"Api-Version": "1.43"}, b"OK"
    return 500, {"Content-Type": "application/json"}, {"message": "the refusal should have come first"}


@pytest.mark.parametrize("args, error", [
    (["--engine", "process", "--workdir", "/primus-absent-wd", "--", "true"],
     "error: the working directory /primus-absent-wd (--workdir) does not exist on this host"),
    (["--engine", "process", "--", "primus-absent-program"], "error: primus-absent-program is not installed on this host"),
    (["--image", "primus-test/busybox:latest", "--gpu", "none", "--device", "/dev/primus-absent-0", "--", "true"],
     "error: device /dev/primus-absent-0 (--device) does not exist on this host"),
])
def test_up_stops_on_a_refusal_with_exit_2_before_the_engine_is_asked(cli, args, error):
    with Server(_daemon) as daemon:
        rc, out, err = cli("up", *args, env={"DOCKER_HOST": f"tcp://{daemon.netloc}"})
    assert rc == 2, err
    assert err.startswith(error) and "Traceback" not in err
    assert not any("/containers" in r["path"] or "/images" in r["path"] for r in daemon.requests), daemon.requests
