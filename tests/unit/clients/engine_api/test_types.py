"""runner.clients.engine_api.types: what a request says, decided without a connection."""

from __future__ import annotations

import pytest

from runner.clients.engine_api.types import (
    LIBPOD_PREFIX, MAX_API_VERSION, MIN_API_VERSION, api_tuple, capabilities, container_ref, gpu_host_config, libpod_url, query,
)
from runner.errors import UsageError


def test_versions_compare_as_numbers_not_text():
    assert api_tuple("1.9") < api_tuple("1.10") < api_tuple("1.41")  # as text "1.9" > "1.10"
    assert api_tuple(" 1.44 ") == (1, 44) and api_tuple("2") == (2, 0)
    assert api_tuple(MIN_API_VERSION) <= api_tuple(MAX_API_VERSION)


def test_query_leaves_out_the_parameters_that_are_none_and_escapes_the_rest():
    assert query("/containers/json", None) == "/containers/json"
    assert query("/containers/json", {"all": 1, "since": None}) == "/containers/json?all=1"
    assert query("/x", {"filters": '{"label": ["a=b"]}'}) == "/x?filters=%7B%22label%22%3A+%5B%22a%3Db%22%5D%7D"


def test_a_libpod_url_is_on_podmans_own_api():
    assert libpod_url("/containers/c1/wait", {"interval": "50ms"}) == LIBPOD_PREFIX + "/containers/c1/wait?interval=50ms"
    assert libpod_url("/images/x/exists") == "/v4.0.0/libpod/images/x/exists"


@pytest.mark.parametrize("name", ["job-1", "primus_run.2", "0123abcdef"])
def test_a_container_name_or_id_is_one_path_segment(name):
    assert container_ref(name) == name


@pytest.mark.parametrize("name", ["../../etc/passwd", "a/b", "x?all=1", "..", "a..b", "-lead", "", "sp ace"])
def test_anything_that_could_walk_the_api_path_is_a_usage_error(name):
    with pytest.raises(UsageError) as refused:
        container_ref(name)
    assert refused.value.exit_code == 2 and "not a container name or id" in str(refused.value)


def test_gpu_rendering_per_engine():
    assert gpu_host_config(None, "docker") == {} and gpu_host_config("rocm", "podman") == {}
    assert gpu_host_config("nvidia", "docker") == {"DeviceRequests": [{"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]}
    assert gpu_host_config("nvidia", "docker", "1.44", cdi=True) == {"DeviceRequests": [{"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=all"]}]}
    assert gpu_host_config("nvidia", "docker", "1.41", cdi=True)["DeviceRequests"][0]["Driver"] == ""  # CDI needs 1.44
    # Podman: CDI names, which Engine.create sends through Podman's own create (its compat create drops them)
    assert gpu_host_config("nvidia", "podman", device_ids=["1", "3"]) == {
        "DeviceRequests": [{"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=1", "nvidia.com/gpu=3"]}]}
    assert capabilities("podman").reports_oom is False and capabilities("docker").reports_oom is True


def test_docker_gpus_by_index_ask_for_exactly_those_devices():
    assert gpu_host_config("nvidia", "docker", device_ids=["0", "2"]) == {
        "DeviceRequests": [{"Driver": "", "DeviceIDs": ["0", "2"], "Capabilities": [["gpu"]]}]}
    assert capabilities("docker").remove_kills and not capabilities("podman").remove_kills
    assert capabilities("podman").image_name_prefix == "localhost/"
