"""--platform: the local image is checked against the requested platform, pulled when the policy allows."""

from __future__ import annotations

import pytest

from runner.engines.docker.platform import ensure_platform, image_platform, matches
from runner.errors import ConfigError

AMD64 = {"Os": "linux", "Architecture": "amd64"}
ARM64 = {"Os": "linux", "Architecture": "arm64"}


def test_image_platform_spells_the_inspect_data():
    assert image_platform(AMD64) == "linux/amd64"
    assert image_platform({"Architecture": "x86_64"}) == "linux/amd64"
    assert image_platform({"Os": "linux", "Architecture": "arm", "Variant": "v7"}) == "linux/arm/v7"
    assert image_platform({}) == "linux/unknown"


@pytest.mark.parametrize("info, wanted, want", [
    (AMD64, "linux", True),
    (AMD64, "linux/amd64", True),
    ({"Os": "linux", "Architecture": "x86_64"}, "linux/amd64", True),
    (AMD64, "linux/x86_64", True),
    (AMD64, "linux/arm64", False),
    (AMD64, "windows/amd64", False),
    (ARM64, "linux/arm64/v8", True),  # an arm64 image without a variant is v8
    ({**ARM64, "Variant": "v8"}, "linux/arm64/v8", True),
    ({"Os": "linux", "Architecture": "arm", "Variant": "v6"}, "linux/arm/v7", False),
    ({"Os": "linux", "Architecture": "arm"}, "linux/arm/v7", False),
])
def test_matches(info, wanted, want):
    assert matches(info, wanted) is want


class Local:
    """The local image store: ``inspect`` sees what ``fetch`` last pulled."""

    def __init__(self, before, after=None):
        self.info, self.after, self.pulls = before, after, 0

    def inspect(self):
        return self.info

    def fetch(self):
        self.pulls += 1
        self.info = self.after


def test_a_matching_local_image_is_used_without_a_pull():
    local = Local(AMD64)
    assert ensure_platform("img", "linux/amd64", "missing", local.inspect, local.fetch) == AMD64
    assert local.pulls == 0


def test_pull_always_pulls_even_a_matching_image():
    local = Local(AMD64, AMD64)
    assert ensure_platform("img", "linux/amd64", "always", local.inspect, local.fetch) == AMD64
    assert local.pulls == 1


def test_another_platform_is_pulled_when_allowed():
    local = Local(AMD64, ARM64)
    assert ensure_platform("img", "linux/arm64", "missing", local.inspect, local.fetch) == ARM64
    assert local.pulls == 1


def test_pull_never_refuses_another_platform_naming_what_it_is():
    local = Local(AMD64)
    with pytest.raises(ConfigError) as err:
        ensure_platform("img:1", "linux/arm64", "never", local.inspect, local.fetch)
    assert local.pulls == 0
    assert err.value.problems[0].message == "image img:1 is linux/amd64, not the requested platform linux/arm64 (--platform)"
    assert "docker pull --platform linux/arm64 img:1" in err.value.problems[0].hint


def test_a_registry_without_the_platform_is_refused():
    local = Local(None, AMD64)  # absent; the pull brings the wrong one
    with pytest.raises(ConfigError) as err:
        ensure_platform("img", "linux/arm64", "missing", local.inspect, local.fetch)
    assert "is linux/amd64" in err.value.problems[0].message
    assert "the registry has no linux/arm64 image of img" in err.value.problems[0].hint
    with pytest.raises(ConfigError, match="is not present locally"):
        ensure_platform("img", "linux/arm64", "never", Local(None).inspect, lambda: None)
