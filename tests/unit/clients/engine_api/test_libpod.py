"""A compat create body as Podman's own create body: every field carried, none dropped (CDI devices included)."""

from __future__ import annotations

import pytest

from runner.clients.engine_api.libpod import cdi_devices, create_body, podman_create

BODY = {
    "Image": "img", "Cmd": ["python", "train.py"], "Entrypoint": ["/bin/sh", "-c", "shim"], "Env": ["A=1", "B=x=y"],
    "Labels": {"io.primus-runner": "true"}, "AttachStdin": True, "OpenStdin": True, "StdinOnce": True, "AttachStdout": True,
    "AttachStderr": True, "Tty": False, "StopTimeout": 7, "User": "1000", "WorkingDir": "/w", "Hostname": "node-a",
    "HostConfig": {"Init": True, "Privileged": False, "CapAdd": ["SYS_PTRACE"], "GroupAdd": ["video"],
                   "SecurityOpt": ["seccomp=unconfined", "label=disable"],
                   "Ulimits": [{"Name": "memlock", "Soft": -1, "Hard": -1}],
                   "Devices": [{"PathOnHost": "/dev/infiniband", "PathInContainer": "/dev/infiniband", "CgroupPermissions": "rwm"}],
                   "Binds": ["/data:/data:ro"], "IpcMode": "host", "NetworkMode": "host", "LogConfig": {"Type": "none", "Config": {}},
                   "Memory": 1 << 30, "NanoCpus": 1_500_000_000,
                   "DeviceRequests": [{"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=1", "nvidia.com/gpu=3"]}]},
}


def test_every_field_is_carried_and_the_cdi_names_are_devices():
    body = create_body("job", BODY)
    assert cdi_devices(BODY) == ["nvidia.com/gpu=1", "nvidia.com/gpu=3"]
    assert body["devices"] == [{"path": "/dev/infiniband:/dev/infiniband:rwm"}, {"path": "nvidia.com/gpu=1"},
                               {"path": "nvidia.com/gpu=3"}]
    assert body["env"] == {"A": "1", "B": "x=y"} and body["command"] == ["python", "train.py"]
    assert body["entrypoint"] == ["/bin/sh", "-c", "shim"] and body["stdin"] is True and body["init"] is True
    assert body["r_limits"] == [{"type": "memlock", "soft": 2**64 - 1, "hard": 2**64 - 1}]
    assert body["mounts"] == [{"destination": "/data", "type": "bind", "source": "/data", "options": ["rbind", "ro"]}]
    assert body["ipcns"] == body["netns"] == {"nsmode": "host"} and body["log_configuration"] == {"driver": "none"}
    assert body["seccomp_profile_path"] == "unconfined" and body["selinux_opts"] == ["disable"]
    assert body["resource_limits"] == {"memory": {"limit": 1 << 30}, "cpu": {"quota": 150_000, "period": 100_000}}
    assert (body["user"], body["work_dir"], body["stop_timeout"], body["groups"], body["hostname"]) == ("1000", "/w", 7, ["video"], "node-a")


@pytest.mark.parametrize("extra", [{"Healthcheck": {}}, {"HostConfig": {"PidMode": "host"}},
                                   {"HostConfig": {"SecurityOpt": ["systempaths=unconfined"]}},
                                   {"HostConfig": {"NetworkMode": "my-net"}}])
def test_a_field_without_a_translation_is_refused_not_dropped(extra):
    config = {**BODY, **extra}
    with pytest.raises(ValueError):
        create_body("job", config)


def test_a_named_volume_stays_a_volume_and_the_working_directory_is_created_as_dockers_is():
    body = create_body("job", {"Image": "img", "WorkingDir": "/w", "HostConfig": {"Binds": ["/data:/data:ro", "cache:/cache:rw"]}})
    assert body["mounts"] == [{"destination": "/data", "type": "bind", "source": "/data", "options": ["rbind", "ro"]}]
    assert body["volumes"] == [{"Name": "cache", "Dest": "/cache", "Options": ["rw"]}]
    assert body["work_dir"] == "/w" and body["create_working_dir"] is True  # the compat create makes it: so does this


def test_without_cdi_an_untranslatable_body_goes_to_the_compat_create_as_given():
    """``podman_create``: None (the compat create carries the field) unless the body needs CDI devices."""
    plain = {k: v for k, v in BODY.items() if k != "HostConfig"} | {"HostConfig": {"PidsLimit": 64, "Init": True}}
    assert podman_create("job", plain) is None
    assert podman_create("job", {"Image": "img", "HostConfig": {"Binds": ["/d:/d:cached"]}}) is None  # Docker's no-op option
    assert podman_create("job", {"Image": "img", "Cmd": ["true"]})["command"] == ["true"]
    with pytest.raises(ValueError, match="PidsLimit"):
        podman_create("job", {**BODY, "HostConfig": {**BODY["HostConfig"], "PidsLimit": 64}})
