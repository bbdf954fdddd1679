"""The syntax of ``container.options`` values: each typed, or a ValueError that states the form."""

from __future__ import annotations

import pytest

from runner.config.container_values import (
    DeviceMapping, Ulimit, parse_bytes, parse_device, parse_entrypoint, parse_label, parse_platform, parse_ulimit,
)


@pytest.mark.parametrize("text, size", [("1024", 1024), ("16m", 16 << 20), ("64G", 64 << 30), ("1.5k", 1536),
                                        (" 2 gb ", 2 << 30), ("1t", 1 << 40), ("7b", 7), (512, 512)])
def test_sizes(text, size):
    assert parse_bytes(text) == size


@pytest.mark.parametrize("text", ["", "g", "16x", "-1g", "1e3"])
def test_a_size_that_is_not_one_says_the_form(text):
    with pytest.raises(ValueError, match=r"is not a number with an optional unit \(b, k, m, g, t\)"):
        parse_bytes(text)


def test_ulimits_soft_and_hard_as_docker_takes_them():
    assert parse_ulimit("nofile=1024:2048") == Ulimit("nofile", 1024, 2048)
    assert parse_ulimit("memlock=-1") == Ulimit("memlock", -1, -1)
    assert parse_ulimit("stack=8192:-1").body() == {"Name": "stack", "Soft": 8192, "Hard": -1}
    assert str(parse_ulimit("nofile=1:2")) == "nofile=1:2"


@pytest.mark.parametrize("spec, says", [("nofile", "is not NAME=SOFT"), ("NOFILE=1", "is not NAME=SOFT"),
                                        ("nofile=a:b", "is not NAME=SOFT"), ("nofile=10:5", "soft limit is above the hard")])
def test_a_bad_ulimit(spec, says):
    with pytest.raises(ValueError, match=says):
        parse_ulimit(spec)


def test_devices_default_their_container_path_and_permissions():
    assert parse_device("/dev/kfd") == DeviceMapping("/dev/kfd", "/dev/kfd", "rwm")
    assert parse_device("/dev/dri/card0:/dev/dri/card1:r").body() == {
        "PathOnHost": "/dev/dri/card0", "PathInContainer": "/dev/dri/card1", "CgroupPermissions": "r"}
    assert parse_device("nvidia.com/gpu=all") == DeviceMapping("nvidia.com/gpu=all", "nvidia.com/gpu=all")  # a CDI name


@pytest.mark.parametrize("spec", ["", "/dev/kfd:dev/kfd", "/dev/kfd:/dev/kfd:x", "/a:/b:r:extra", "/dev/kfd:/dev/kfd:rwmr"])
def test_a_bad_device(spec):
    with pytest.raises(ValueError, match=r"is not HOST\[:CONTAINER\[:PERMS\]\]"):
        parse_device(spec)


def test_labels_and_the_runners_own_prefix():
    assert parse_label("team=ml") == ("team", "ml") and parse_label("flag") == ("flag", "")
    assert parse_label("a.b/c=x=y") == ("a.b/c", "x=y")
    with pytest.raises(ValueError, match="runner's own labels"):
        parse_label("io.primus-runner.run=fake")
    with pytest.raises(ValueError, match="is not KEY=VALUE"):
        parse_label("=x")


def test_platforms_and_entrypoints():
    assert parse_platform(" linux/arm/v7 ") == "linux/arm/v7"
    for bad in ("Linux/amd64", "linux/", "linux/a/b/c"):
        with pytest.raises(ValueError, match=r"is not OS\[/ARCH\[/VARIANT\]\]"):
            parse_platform(bad)
    assert parse_entrypoint("/bin/sh") == "/bin/sh" and parse_entrypoint("") == ""
    with pytest.raises(ValueError, match="one program"):
        parse_entrypoint("sh\n-c")
