"""A request as the ``docker run`` that would do the same (runner.engines.docker.render): every field of
the create body as its flag, secrets by name only, the shim named for what it is, and the dry-run text."""

from __future__ import annotations

from dataclasses import replace

import pytest

from plan_factory import plan_from_layer
from runner.engines.docker.container import DockerRequest
from runner.engines.docker.render import SHIM_TOKEN, run_argv, run_text, shim_note
from runner.engines.docker.request import make_request
from runner.options import LaunchFlags

CANARY = "render-canary-9b2c44"


def _request(secrets_via="stdin", options=None, entrypoint=None, **kw) -> DockerRequest:
    layer = {"container": {"gpu": "none", "secrets_via": secrets_via, "options": {
        "image": "img:1", "privileged": False, "ulimit": [], "group-add": [], "env": ["HF_TOKEN", "A=x y"], **(options or {})}}}
    _, planned = plan_from_layer(layer, ["train", "--lr", "0.1"], host={"HF_TOKEN": CANARY, "PATH": "/usr/bin"}, flags=LaunchFlags(name="j", entrypoint=entrypoint))
    return make_request(planned.require(), {}, **kw)


def _with_host(host: dict) -> list[str]:
    """The flags ``run_argv`` renders for a body whose HostConfig is ``host`` (and nothing else)."""
    request = _request(secrets_via="env")
    request = replace(request, config={"Image": "img:1", "HostConfig": host}, secret_names=())
    argv = run_argv(request)
    return argv[argv.index("--rm") + 1:argv.index("img:1")]


@pytest.mark.parametrize("host, flags", [
    ({"Init": True, "Privileged": True}, ["--init", "--privileged"]),
    ({"CapAdd": ["SYS_PTRACE"], "GroupAdd": ["video"], "SecurityOpt": ["seccomp=unconfined"]},
     ["--cap-add", "SYS_PTRACE", "--group-add", "video", "--security-opt", "seccomp=unconfined"]),
    ({"Ulimits": [{"Name": "memlock", "Soft": -1, "Hard": -1}]}, ["--ulimit", "memlock=-1:-1"]),
    ({"Devices": [{"PathOnHost": "/dev/kfd", "PathInContainer": "/dev/kfd", "CgroupPermissions": "rwm"}]}, ["--device", "/dev/kfd:/dev/kfd:rwm"]),
    ({"DeviceRequests": [{"Driver": "", "Count": -1}]}, ["--gpus", "all"]),
    ({"DeviceRequests": [{"Driver": "", "DeviceIDs": ["1", "3"]}]}, ["--gpus", "device=1,3"]),
    ({"DeviceRequests": [{"Driver": "", "Count": 2}]}, ["--gpus", "2"]),
    ({"DeviceRequests": [{"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=0", "nvidia.com/gpu=1"]}]},
     ["--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=1"]),
    ({"Binds": ["/data:/data:ro"], "IpcMode": "host", "NetworkMode": "none"}, ["-v", "/data:/data:ro", "--ipc", "host", "--network", "none"]),
    ({"ShmSize": 1 << 30, "Memory": 0}, ["--shm-size", str(1 << 30), "--memory", "0"]),  # no size as written: the body's bytes
    ({"NanoCpus": 2_500_000_000, "LogConfig": {"Type": "json-file"}}, ["--cpus", "2.5", "--log-driver", "json-file"]),
    ({}, []),
])
def test_each_host_config_field_is_its_docker_run_flag(host, flags):
    assert _with_host(host) == flags


def test_a_size_is_shown_as_the_user_wrote_it():
    argv = run_argv(_request(options={"shm-size": "8g", "memory": "64g"}))
    assert argv[argv.index("--shm-size") + 1] == "8g" and argv[argv.index("--memory") + 1] == "64g"


def test_with_the_shim_the_secret_is_a_name_and_the_script_a_token():
    request = _request()
    argv = run_argv(request)
    assert ["-e", "A=x y", "-e", "HF_TOKEN"] == argv[argv.index("A=x y") - 1:argv.index("HF_TOKEN") + 1]
    assert argv[argv.index("img:1") - 2:] == ["--entrypoint", "/bin/sh", "img:1", "-c", SHIM_TOKEN, "primus-shim",
                                              "<image-entrypoint>", "train", "--lr", "0.1"]
    text = run_text(request)
    assert CANARY not in " ".join(argv) + text and "while IFS= read" not in text  # the script itself is never printed
    assert text.splitlines()[-4:] == [f"# {shim_note(request)}", "# pull: missing; image: pulled when it is not local", "# engine: docker",
                                      "# not known without image entrypoint: resolved before the container is created"]


def test_with_secrets_via_env_the_value_stays_off_the_command_and_the_text():
    request = _request(secrets_via="env")
    assert f"HF_TOKEN={CANARY}" in request.config["Env"]  # the user's explicit choice: the body carries it
    argv, text = run_argv(request), run_text(request)
    assert CANARY not in " ".join(argv) and CANARY not in text
    assert argv.count("HF_TOKEN") == 1 and "--entrypoint" not in argv
    assert "# secrets_via env: HF_TOKEN go into the container's Env (visible to docker inspect)" in text.splitlines()


def test_the_shim_note_says_what_the_shim_does_with_and_without_a_terminal():
    plain = shim_note(_request())
    assert plain == (f"{SHIM_TOKEN}: the runner's /bin/sh script (runner/engines/docker/shim.py) reads HF_TOKEN from the attached "
                     "stdin, exports them and execs the command; their values are in no argument, no Env and no label "
                     "(docker inspect shows none)")
    tty = shim_note(_request(interactive=True, tty=True))
    assert "turns the terminal's echo off, says it is ready, reads HF_TOKEN" in tty and "restores the terminal and execs the command" in tty


def test_the_text_is_one_option_a_line_with_the_command_last_and_quoted():
    request = _request(secrets_via="env", remove=False, detach=True, kind="podman")
    lines = run_text(request).splitlines()
    assert lines[:3] == ["podman run \\", "  --name j \\", "  --detach \\"]
    assert all(line.startswith("  -") and line.endswith(" \\") for line in lines[1:lines.index("  img:1 train --lr 0.1")])
    assert "  -e 'A=x y' \\" in lines  # shell-quoted for a person to copy
    assert "--rm" not in " ".join(lines)


def test_an_empty_entrypoint_is_rendered_as_cleared():
    request = _request(secrets_via="env", entrypoint="")
    argv = run_argv(request)
    assert argv[argv.index("--entrypoint"):argv.index("--entrypoint") + 3] == ["--entrypoint", "", "img:1"]
    assert "--entrypoint '' \\" in run_text(request)
