"""The per-host, per-image job cache: its mount, the variables nothing else sets, and ``cache.dir``,
a path with one placeholder, ``{uid}``, never a template (``str.format`` would evaluate
``{uid.__class__.__mro__}`` written in a config)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from cli_runner import run_cli
from runner.launch_plan import ContainerSpec, JobSpec, LaunchPlan
from runner.policy import EnvDecision
from runner.runs import cache
from runner.trackers.config import TrackerPlan


def _plan(env: dict | None = None) -> LaunchPlan:
    decisions = tuple(EnvDecision(k, True, False, "test", "env", v) for k, v in (env or {}).items())
    job = JobSpec(command=("true",), name="job", gpu="none", env=decisions, trackers=TrackerPlan("megatron", (), {}, wandb_mode="offline"))
    return LaunchPlan(job, ContainerSpec(image="img:1"))


def _cache_mount(tmp_path, directory: str) -> str:
    (tmp_path / "cfg.yaml").write_text(f"container:\n  gpu: none\ncache:\n  dir: '{directory}'\n")
    result = run_cli(tmp_path, "--config", "cfg.yaml", "--json", "plan", "--", "true")
    assert result.returncode == 0, result.stderr
    return next(m["source"] for m in json.loads(result.stdout)["mounts"] if m["target"] == "/primus-runner/cache")


def test_a_format_expression_in_cache_dir_is_not_evaluated(tmp_path):
    source = _cache_mount(tmp_path, str(tmp_path / "c-{uid.__class__.__mro__}"))
    assert source.startswith(str(tmp_path / "c-{uid.__class__.__mro__}") + "/"), source
    assert "<class" not in source


def test_uid_is_still_replaced(tmp_path):
    assert _cache_mount(tmp_path, str(tmp_path / "c-{uid}")).startswith(str(tmp_path / f"c-{os.getuid()}") + "/")


def test_the_cache_mount_and_variables_and_a_users_own_choice_wins(tmp_path):
    plan = _plan(env={"TRITON_CACHE_DIR": "/mine"})
    new = cache.apply(plan, tmp_path / "c")
    env = new.job.public_env()
    assert env["TRITON_CACHE_DIR"] == "/mine"
    assert env["TORCHINDUCTOR_CACHE_DIR"] == f"{cache.TARGET}/inductor" and env["HIPBLASLT_TUNING_FILE"].endswith(".csv")
    assert set(cache.VARIABLES) <= set(env) and env["PRIMUS_CACHE_ROOT"] == cache.TARGET
    assert (str(tmp_path / "c"), cache.TARGET) in {(m.source, m.target) for m in new.container.mounts}
    assert cache.image_key("a/b:1") != cache.image_key("a/b:2")


@pytest.mark.parametrize("placed_by", ["HF_HOME", "HF_HUB_CACHE", "DATA_PATH"])
def test_the_hub_cache_is_left_to_what_places_it(tmp_path, placed_by):
    """HF_HOME, HF_HUB_CACHE or DATA_PATH (Primus's env scripts put the hub cache under it): no HF_HUB_CACHE of the runner's."""
    plan = cache.apply(_plan(env={placed_by: "/data/hf"}), tmp_path / "c")
    env = plan.job.public_env()
    assert env.get("HF_HUB_CACHE", "/data/hf") == "/data/hf" and env["TRITON_CACHE_DIR"] == f"{cache.TARGET}/triton"


def test_cache_variables_the_image_sets_are_left_to_the_image(tmp_path):
    """The image's own ENV (docker resolve reads it from the image's inspect): the runner's value does not override it."""
    from runner.engines.docker.request import make_request, resolve

    plan = cache.apply(_plan(env={}), tmp_path / "c")
    request = make_request(plan, {})
    image = {"Config": {"Env": ["PATH=/usr/bin", "HF_HOME=/data/hf", "TRITON_CACHE_DIR=/image/triton"]}}
    resolved = resolve(request, None, image)
    names = {e.partition("=")[0] for e in resolved.config["Env"]}
    assert not {"HF_HUB_CACHE", "TRITON_CACHE_DIR"} & names and "TORCHINDUCTOR_CACHE_DIR" in names
    assert {"HF_HUB_CACHE", "TRITON_CACHE_DIR"}.isdisjoint(resolved.plan.job.public_env())
    assert any("image's ENV" in d for d in resolved.decisions)


def test_an_image_key_is_a_safe_directory_name_distinct_per_reference():
    key = cache.image_key("registry.example:5000/ml/train:v1@sha256:ab")
    assert key.startswith("registry.example_5000_ml_train_v1_sha256_ab-") and "/" not in key and ":" not in key
    assert cache.image_key("a/b:1") != cache.image_key("a_b:1")  # the same safe text, told apart by the hash
    assert len(cache.image_key("x" * 500)) == 80 + 1 + 8


def test_settings_default_to_the_cache_home_and_a_per_uid_node_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.settings(None) == cache.CacheSettings(True, str(tmp_path / "primus-runner" / "job-cache"),
                                                      cache.DEFAULT_NODE_DIR)


def test_make_dir_makes_each_tools_place_private(tmp_path):
    cache.make_dir(tmp_path / "c")
    assert (tmp_path / "c" / "huggingface" / "hub").is_dir() and (tmp_path / "c" / "hipblaslt").is_dir()
    assert not (tmp_path / "c" / "hipblaslt" / "tuning.csv").exists()  # a file the tool writes, not a directory
    assert stat.S_IMODE((tmp_path / "c" / "triton").stat().st_mode) == 0o700
