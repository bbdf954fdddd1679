"""A container request in its two steps (runner.engines.docker.request): ``make_request`` from the plan
alone (pure), ``resolve`` with what the engine and the image tell; ``inspect_local`` reads the local
image. The engine is a loopback server answering as Docker or Podman would."""

from __future__ import annotations

import pytest

from loopback_servers import Server
from plan_factory import plan_from_layer
from runner.clients.engine_api import Engine
from runner.engines.docker.request import inspect_local, make_request, resolve, resolve_unasked
from runner.errors import RuntimeFailure
from runner.options import LaunchFlags

CANARY = "request-canary-7d3e11"


def _plan(gpu="none", secrets_via="stdin", env=("HF_TOKEN", "A=1"), pull="missing", host=None, **flags):
    layer = {"container": {"gpu": gpu, "secrets_via": secrets_via, "pull": pull, "options": {
        "image": "img:1", "privileged": False, "ulimit": [], "group-add": [], "env": list(env)}}}
    host = {"HF_TOKEN": CANARY, "PATH": "/usr/bin"} if host is None else host
    _, planned = plan_from_layer(layer, ["train"], host=host, flags=LaunchFlags(name="j", **flags))
    return planned.require()


def _engine_server(kind="docker", api="1.43", image=None, image_status=200):
    """A daemon on loopback: ``/_ping`` says its kind and version; an image inspect answers ``image``."""
    def answer(server, request):
        if request["path"] == "/_ping":
            headers = {"Api-Version": api} | ({"Libpod-Api-Version": "4.9.3", "Server": "Libpod/4.9.3"} if kind == "podman" else {})
            return 200, headers, b"OK"
        if "/images/" in request["path"]:
            return image_status, {"Content-Type": "application/json"}, image if image_status == 200 else {"message": "boom: disk on fire"}
        return 404, {"Content-Type": "application/json"}, {"message": "not here"}
    return Server(answer)


@pytest.fixture
def engine_at():
    """``engine_at(server)``: a client of its own for that loopback daemon."""
    def make(server):
        return Engine(host=f"tcp://{server.netloc}")
    return make


@pytest.mark.parametrize("policy, fetch, line", [
    ("missing", "pull", "pull: missing; image: pulled when it is not local"),
    ("always", "pull", "pull: always; image: pulled before the container is created"),
    ("never", "pull", "pull: never; image: used only if it is local"),
    ("missing", "build", "pull: missing; image: built from its recipe when it is not local (--build)"),
])
def test_the_first_decision_says_how_the_image_is_got(policy, fetch, line):
    request = make_request(_plan(pull=policy), {}, fetch=fetch)
    assert request.decisions[0] == line and request.fetch == fetch


@pytest.mark.parametrize("entrypoint, gpu, pending, entry_tail", [
    (None, "none", ("image entrypoint",), ["primus-shim"]),
    ("/bin/env", "none", (), ["primus-shim", "/bin/env"]),
    ("", "none", (), ["primus-shim"]),
    (None, "cuda", ("image entrypoint", "the engine's GPU request form"), ["primus-shim"]),
])
def test_what_the_plan_cannot_tell_is_left_pending_by_name(entrypoint, gpu, pending, entry_tail):
    request = make_request(_plan(gpu=gpu, entrypoint=entrypoint), {"team": "ml"})
    assert request.pending == pending
    assert request.config["Entrypoint"][:2] == ["/bin/sh", "-c"] and request.config["Entrypoint"][3:] == entry_tail
    assert "DeviceRequests" not in request.config["HostConfig"]  # the engine's own form: resolve's
    assert request.labels["team"] == "ml" and request.config["Labels"] == request.labels


def test_the_secret_is_in_no_field_of_the_shimmed_body_and_only_env_carries_it_with_secrets_via_env():
    shimmed = make_request(_plan(), {})
    assert shimmed.use_shim and shimmed.secret_names == ("HF_TOKEN",)
    assert CANARY not in repr(shimmed.config) and shimmed.config["Env"] == ["A=1"]
    plain = make_request(_plan(secrets_via="env"), {})
    assert not plain.use_shim and "Entrypoint" not in plain.config
    assert [e for e in plain.config["Env"] if CANARY in e] == [f"HF_TOKEN={CANARY}"]
    assert CANARY not in repr({k: v for k, v in plain.config.items() if k != "Env"})
    none = make_request(_plan(host={"PATH": "/usr/bin"}), {})  # HF_TOKEN not set: no secret
    assert not none.use_shim and none.secret_names == () and "Entrypoint" not in none.config


def test_the_run_id_the_kind_and_the_platform_are_in_the_request():
    request = make_request(_plan(platform="linux/arm64"), {}, kind="podman", run_id="r-1", remove=False, detach=True, engine="podman")
    assert request.labels["io.primus-runner.run"] == "r-1" and (request.kind, request.engine) == ("podman", "podman")
    assert not request.remove and request.detach
    assert request.decisions[1:] == ("engine: podman", "platform: linux/arm64 (--platform; the local image must be that platform, else it is pulled)")
    assert "io.primus-runner.run" not in make_request(_plan(), {}).labels  # a Slurm node's container: no run of its own


@pytest.mark.parametrize("kind, api, host_config", [
    ("docker", "1.43", {"DeviceRequests": [{"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]}),
    ("podman", "1.41", {"DeviceRequests": [{"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=all"]}]}),
])
def test_resolve_asks_the_engine_for_its_gpu_form_and_records_it(engine_at, kind, api, host_config):
    request = make_request(_plan(gpu="cuda"), {})
    with _engine_server(kind, api) as server:
        final = resolve(request, engine_at(server), None)
        host = f"tcp://{server.netloc}"
    assert {k: final.config["HostConfig"][k] for k in host_config} == host_config
    assert final.pending == ("image entrypoint",) and final.kind == kind
    assert f"engine: {kind} at {host}, API {api}" in final.decisions and "engine: docker" not in final.decisions
    assert "GPU request (nvidia) in " + kind + "'s form" in final.decisions
    assert "DeviceRequests" not in request.config["HostConfig"] and request.pending[-1] == "the engine's GPU request form"  # unchanged


def test_resolve_with_the_images_inspect_fills_the_entrypoint_and_leaves_its_cache_variables_to_it():
    from runner.runs import cache

    plan = _plan()
    plan = plan.with_env({"TRITON_CACHE_DIR": "/cache/triton", "PRIMUS_CACHE_ROOT": "/cache"}, cache.REASON)
    request = make_request(plan, {})
    assert "TRITON_CACHE_DIR=/cache/triton" in request.config["Env"]
    final = resolve(request, None, {"Config": {"Entrypoint": ["/init"], "Env": ["TRITON_CACHE_DIR=/opt/triton"]}})
    assert final.config["Entrypoint"][-2:] == ["primus-shim", "/init"] and final.pending == ()
    assert "TRITON_CACHE_DIR=/cache/triton" not in final.config["Env"] and "PRIMUS_CACHE_ROOT=/cache" in final.config["Env"]
    assert final.decisions[-2:] == ("the shim execs the image's entrypoint ['/init'] (from the image's inspect)",
                                    "cache variables left to the image's ENV: TRITON_CACHE_DIR")
    assert "TRITON_CACHE_DIR" not in final.plan.job.public_env()


def test_resolve_with_nothing_known_changes_nothing_but_the_copy():
    request = make_request(_plan(gpu="cuda"), {})
    final = resolve(request, None, None)
    assert (final.config, final.pending, final.decisions) == (request.config, request.pending, request.decisions)
    assert final.config is not request.config


def test_resolve_unasked_names_the_engine_discovery_found():
    request = make_request(_plan(), {})
    final = resolve_unasked(request, "podman", "unix:///run/podman/podman.sock", "its socket answers")
    assert final.kind == "podman" and "engine: docker" not in final.decisions
    assert final.decisions[-1] == ("engine: podman at unix:///run/podman/podman.sock (its socket answers; "
                                   "its API version is negotiated at launch)")


def test_inspect_local_reads_the_image_is_none_when_absent_and_fails_plainly_otherwise(engine_at):
    with _engine_server(image={"Id": "sha256:1", "Config": {"Entrypoint": ["/e"]}}) as server:
        assert inspect_local(engine_at(server), "img:1")["Config"]["Entrypoint"] == ["/e"]
        assert [r["method"] for r in server.requests if "/images/" in r["path"]] == ["GET"]  # read only: never a pull
    with _engine_server(image_status=404) as server:
        assert inspect_local(engine_at(server), "img:1") is None
    with _engine_server(image_status=500) as server, pytest.raises(RuntimeFailure, match=r"^cannot inspect image img:1: boom: disk on fire$"):
        inspect_local(engine_at(server), "img:1")
