"""A build as data: the spec's JSON (what ``build --dry-run --json`` shows) and the result's."""

from __future__ import annotations

from pathlib import Path

from runner.images.spec import CA_NAME, L_CREATED, STAGED_DOCKERFILE, BuildResult, BuildSpec


def spec(**kw) -> BuildSpec:
    fields = dict(flavor="rocm", context_dir="/recipes", dockerfile="rocm/Dockerfile", base="rocm/primus:v1", tag="t:1",
                  build_args=(("BASE_IMAGE", "rocm/primus:v1"),), labels=(("io.primus-runner.flavor", "rocm"),),
                  files=("rocm/Dockerfile",), ca_source="/etc/ssl/ca.crt", recipe_hash="h", secrets=("HF_TOKEN",))
    return BuildSpec(**{**fields, **kw})


def test_a_recipe_build_as_json():
    doc = spec().to_dict()
    assert doc["dockerfile"] == "rocm/Dockerfile" and doc["context"] == "/recipes" and doc["flavor"] == "rocm"
    assert doc["build_args"] == {"BASE_IMAGE": "rocm/primus:v1"} and doc["secrets"] == ["HF_TOKEN"]
    assert doc["labels"] == {"io.primus-runner.flavor": "rocm", L_CREATED: "(set when built)"}
    assert doc["ca_bundle"] == {"source": "/etc/ssl/ca.crt", "staged_as": CA_NAME}
    assert not spec().user_dockerfile and spec().dockerfile_path() == Path("/recipes/rocm/Dockerfile")


def test_a_users_dockerfile_outside_its_context():
    own = spec(flavor=None, context_dir="/ctx", dockerfile=STAGED_DOCKERFILE, dockerfile_source="/home/u/build.Dockerfile",
               stage_ca=False, ca_source=None)
    assert own.user_dockerfile and own.dockerfile_path() == Path("/home/u/build.Dockerfile")
    doc = own.to_dict()
    assert doc["dockerfile"] == "/home/u/build.Dockerfile" and doc["ca_bundle"] is None


def test_the_result_as_json_leaves_out_the_log():
    result = BuildResult("sha256:1", "t:1", "rocm", {"a": "b"}, builder="buildkit", steps=3, cache_hits=1, ran=2, log=["#1 DONE"])
    assert result.to_dict() == {"image_id": "sha256:1", "tag": "t:1", "flavor": "rocm", "labels": {"a": "b"},
                                "builder": "buildkit", "cache_hits": 1, "steps": 3, "ran": 2}
