"""`primus-runner build` against the real daemon: both recipes build on the local
python base, their tracker clients import in a job run through `up`, labels are
right, a rebuild is all cache hits, and no canary secret reaches the image.

The first build installs the pinned clients (one to three minutes here); the
tags are fixed, so a rerun on the same daemon is cached.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import tarfile
from datetime import datetime
from pathlib import Path

import pytest

from docker_helpers import CONFIG, Workspace
from engine_fixtures import assert_no_leak

import runner
from runner.errors import RuntimeFailure
from runner.images import context as build_context
from runner.images import recipe as build_recipe
from runner.images.stream import run_build

pytestmark = pytest.mark.docker

TAGS = {"rocm": "primus-test/trainer-rocm:pytest", "cuda": "primus-test/trainer-cuda:pytest"}
PINS = dict(line.split("==") for line in (build_recipe.recipes_dir(None) / "common/requirements.txt").read_text().splitlines() if "==" in line and not line.startswith("#"))
JOB_CONFIG = CONFIG.replace("image: primus-test/busybox:latest", "image: primus-test/trainer-rocm:pytest")


def _build(ws: Workspace, flavor: str, base: str, *extra: str):
    return ws.run("--json", "build", "--flavor", flavor, "--base", base, "--tag", TAGS[flavor], *extra, timeout=900)


@pytest.fixture(scope="module")
def built(python_image, tmp_path_factory):
    """Both flavors built once, with canary secrets in the host env and in ./.env."""
    from engine_fixtures import make_canary

    canary = make_canary()
    ws = Workspace(tmp_path_factory.mktemp("images"), canary, config=JOB_CONFIG)
    (ws.cwd / ".env").write_text("".join(f"{k}_FROM_FILE_TOKEN={v}-file\n" for k, v in canary.items()))
    secrets = {**canary, **{f"{k}_FROM_FILE": f"{v}-file" for k, v in canary.items()}}
    results = {}
    for flavor in ("rocm", "cuda"):
        proc = _build(ws, flavor, python_image)
        assert proc.returncode == 0, proc.stderr.decode()[-4000:]
        assert_no_leak(proc.stdout + proc.stderr, secrets, f"build {flavor} output")
        results[flavor] = json.loads(proc.stdout)
    return ws, secrets, results


@pytest.mark.parametrize("flavor", ["rocm", "cuda"])
def test_recipe_builds_with_correct_labels(built, docker_client, python_image, flavor):
    ws, _, results = built
    result = results[flavor]
    assert result["tag"] == TAGS[flavor] and result["flavor"] == flavor
    image = docker_client.images.get(TAGS[flavor])
    assert image.id == result["image_id"]
    labels = image.labels
    context = build_recipe.recipes_dir(None)
    revision = subprocess.run(["git", "-C", str(context), "log", "-1", "--format=%H", "--", "."], capture_output=True, text=True).stdout.strip()
    assert labels["org.opencontainers.image.revision"] == (revision or "unknown")
    assert labels["org.opencontainers.image.base.name"] == python_image
    assert labels["org.opencontainers.image.source"]
    assert labels["io.primus-runner.flavor"] == flavor
    assert labels["io.primus-runner.version"] == runner.__version__
    files = [f for f in build_context.context_files(context, f"{flavor}/Dockerfile") if f != build_recipe.CA_NAME]
    assert labels["io.primus-runner.recipe-hash"] == build_context.recipe_hash(context, files)
    created = datetime.strptime(labels["org.opencontainers.image.created"], "%Y-%m-%dT%H:%M:%SZ")
    assert created.year >= 2024
    assert result["labels"] == {k: v for k, v in labels.items() if k in result["labels"]}
    assert image.attrs["Config"]["User"] == "primus"  # non-root where the base allows it


@pytest.mark.parametrize("flavor", ["rocm", "cuda"])
def test_tracker_clients_import_in_a_job_run_through_up(built, flavor):
    ws, secrets, _ = built
    code = "import mlflow, wandb, tensorboard, os; print('clients', mlflow.__version__, wandb.__version__, tensorboard.__version__, os.getuid())"
    proc = ws.run("up", "--gpu", "none", "--image", TAGS[flavor], "--", "python3", "-c", code, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    assert f"clients {PINS['mlflow-skinny']} {PINS['wandb']} {PINS['tensorboard']} 1000" in proc.stdout.decode()
    assert_no_leak(proc.stdout + proc.stderr, secrets, "up output")


def test_rebuild_without_change_is_all_cache_hits(built, python_image):
    ws, _, results = built
    proc = _build(ws, "rocm", python_image)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    again = json.loads(proc.stdout)
    assert again["ran"] == 0, proc.stderr.decode()
    assert again["cache_hits"] >= again["steps"] - 2  # all but the ARG before FROM and FROM itself
    assert again["image_id"] == results["rocm"]["image_id"]
    assert again["labels"]["org.opencontainers.image.created"] == results["rocm"]["labels"]["org.opencontainers.image.created"]


class _ScanningReader:
    """A file over an iterator of byte chunks that scans each chunk (with an overlap across chunks)
    for every form of the secrets before handing its bytes on."""

    def __init__(self, chunks, secrets: dict, where: str, overlap: int = 4096):
        self.chunks, self.secrets, self.where, self.overlap = iter(chunks), secrets, where, overlap
        self.buf, self.tail, self.scanned = bytearray(), b"", 0

    def _pull(self) -> bool:
        chunk = next(self.chunks, None)
        if chunk is None:
            return False
        assert_no_leak(self.tail + chunk, self.secrets, self.where)
        self.tail, self.scanned = chunk[-self.overlap:], self.scanned + len(chunk)
        self.buf += chunk
        return True

    def read(self, size: int = -1) -> bytes:
        while (size < 0 or len(self.buf) < size) and self._pull():
            pass
        size = len(self.buf) if size < 0 else min(size, len(self.buf))
        out = bytes(self.buf[:size])
        del self.buf[:size]
        return out

    def drain(self) -> None:
        """Scan whatever the tar reader did not ask for (the end-of-archive padding)."""
        while self._pull():
            self.buf.clear()


def test_canary_never_in_image_config_history_or_layers(built, docker_client):
    _, secrets, results = built
    for flavor in ("rocm", "cuda"):
        image = docker_client.images.get(TAGS[flavor])
        assert_no_leak(json.dumps(image.attrs), secrets, f"{flavor} image config")
        assert_no_leak(json.dumps(image.history()), secrets, f"{flavor} image history")
        # One pass over `docker save`'s stream: every byte is scanned as the tar reader takes it. The
        # outer tar and its layer tars are uncompressed, so this sees each layer's files byte for byte.
        reader = _ScanningReader(image.save(named=True), secrets, f"{flavor} docker save tar")
        layers = 0
        with tarfile.open(fileobj=reader, mode="r|") as outer:
            for member in outer:
                layers += member.isfile() and member.name.endswith("layer.tar")
        reader.drain()
        assert reader.scanned > 0 and layers >= 3  # the base, the tracker install, the user setup at least


def test_a_secret_in_the_image_is_found_and_the_image_removed(python_image, docker_client, tmp_path, canary):
    """The post-build scan: a recipe that bakes a value in (the context check is bypassed here on purpose)."""
    from runner.secrets import Masker
    from runner.ui import Output

    recipe = tmp_path / "recipes"
    (recipe / "rocm").mkdir(parents=True)
    (recipe / "rocm" / "Dockerfile").write_text(
        f"ARG BASE_IMAGE\nFROM ${{BASE_IMAGE}}\nRUN echo {canary['HF_TOKEN']} >/dev/null\nLABEL io.primus-runner.test=leak\n"
    )
    tag = "primus-test/leaky:pytest"
    spec = build_recipe.BuildSpec(
        flavor="rocm", context_dir=str(recipe), dockerfile="rocm/Dockerfile", base=python_image, tag=tag,
        build_args=(("BASE_IMAGE", python_image),), labels=(), files=("rocm/Dockerfile",), ca_source=None, recipe_hash="x",
    )
    masker = Masker(canary.values())
    with pytest.raises(RuntimeFailure) as failure:
        run_build(spec, Output(masker=masker), masker)
    assert "history[" in failure.value.message and "removed" in failure.value.message
    assert_no_leak(failure.value.message, canary, "failure message")
    from docker.errors import ImageNotFound

    with pytest.raises(ImageNotFound):
        docker_client.images.get(tag)


def test_failed_build_prints_the_masked_log_and_exits_3(python_image, tmp_path, canary):
    recipe = tmp_path / "recipes"
    (recipe / "rocm").mkdir(parents=True)
    (recipe / "rocm" / "Dockerfile").write_text('ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nARG TOKEN_SHOWN\nRUN echo "token is $TOKEN_SHOWN"; exit 7\n')
    ws = Workspace(tmp_path / "ws", canary, config=f"images:\n  dir: {recipe}\n")
    # A secret's value arriving under a harmless name is refused before any build ...
    refused = ws.run("build", "--base", python_image, "--build-arg", f"TOKEN_SHOWN={canary['WANDB_API_KEY']}")
    assert refused.returncode == 2
    assert_no_leak(refused.stdout + refused.stderr, canary, "refusal")
    # ... a failing step exits 3 with the full log (the failing command's output included).
    proc = ws.run("build", "--base", python_image, "--tag", "primus-test/failing:pytest", "--build-arg", "TOKEN_SHOWN=visible-marker")
    assert proc.returncode == 3, proc.stderr.decode()
    err = proc.stderr.decode()
    assert "token is visible-marker" in err and "failed at step" in err and "non-zero code: 7" in err
    assert_no_leak(proc.stdout + proc.stderr, canary, "failed build output")


def test_staged_ca_lets_pip_through_the_intercepting_proxy(python_image, docker_client, tmp_path):
    """On a base WITHOUT this network's CA, TLS to PyPI fails; the runner-staged bundle fixes it for the build."""
    stripped = "primus-test/python-noca:pytest"
    docker_client.images.build(fileobj=io.BytesIO(f"FROM {python_image}\nRUN : > /etc/ssl/certs/ca-certificates.crt\n".encode()), tag=stripped, rm=True)
    check = "import ssl, sys, urllib.request; ctx = ssl.create_default_context(cafile=sys.argv[1]) if sys.argv[1:] else None; urllib.request.urlopen('https://pypi.org/simple/pip/', timeout=30, context=ctx); print('TLS-OK')"
    recipe = tmp_path / "recipes"
    (recipe / "common").mkdir(parents=True)
    (recipe / "rocm").mkdir()
    (recipe / "common" / "probe.py").write_text(check + "\n")
    (recipe / "rocm" / "Dockerfile").write_text(
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY common/probe.py common/ca-bundle.crt /probe/\n"
        "RUN python3 /probe/probe.py 2>&1 | tail -1; true\n"
        "RUN python3 /probe/probe.py /probe/ca-bundle.crt\n"
    )
    ws = Workspace(tmp_path / "ws", config=f"images:\n  dir: {recipe}\n")
    proc = ws.run("--verbose", "build", "--base", stripped, "--tag", "primus-test/ca-probe:pytest", "--no-cache", timeout=300)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err[-3000:]
    assert "CERTIFICATE_VERIFY_FAILED" in err  # the base alone cannot reach PyPI here
    assert "TLS-OK" in err  # with the staged host bundle it can


def test_up_build_follows_config_gpu_and_env_file(tmp_path, busybox_image, docker_client):
    """`up --build` builds the recipe of the caller's --config (images.dir) and --gpu flavor, with the
    --env-file's secrets in scope (they were once dropped, so the shipped rocm recipe was built)."""
    from docker.errors import ImageNotFound

    recipes = tmp_path / "recipes"
    (recipes / "cuda").mkdir(parents=True)
    (recipes / "rocm").mkdir(parents=True)
    (recipes / "cuda" / "Dockerfile").write_text(f"FROM {busybox_image}\nLABEL test.recipe=cuda-from-config\n")
    (recipes / "rocm" / "Dockerfile").write_text(f"FROM {busybox_image}\nLABEL test.recipe=rocm-from-config\n")
    (tmp_path / "extra.yaml").write_text(f"images:\n  dir: {recipes}\n")
    token = f"env-file-only-{tmp_path.name}-{__import__('uuid').uuid4().hex}"
    (tmp_path / "job.env").write_text(f"RECIPE_TOKEN={token}\n")
    (tmp_path / "job.env").chmod(0o600)
    ws = Workspace(tmp_path / "ws", config="container:\n  gpu: none\n  options:\n    privileged: false\n    ulimit: []\n    group-add: []\n")
    image = f"primus-test/up-build:{__import__('uuid').uuid4().hex[:8]}"
    args = ("--config", str(tmp_path / "extra.yaml"), "--env-file", str(tmp_path / "job.env"), "up", "--build", "--gpu", "cuda", "--image", image, "--", "true")
    try:
        proc = ws.run(*args, timeout=300)
        # The job itself may not start here (no NVIDIA runtime): the image is what this test is about.
        assert proc.returncode in (0, 3), proc.stderr.decode()[-3000:]
        labels = docker_client.images.get(image).labels
        assert labels["test.recipe"] == "cuda-from-config" and labels["io.primus-runner.flavor"] == "cuda"
        assert labels["org.opencontainers.image.source"] == f"file://{recipes}"
        docker_client.images.remove(image, force=True)
        # The env file's secret is in the build's scope: a recipe file holding it is refused, nothing built.
        (recipes / "cuda" / "notes.txt").write_text(f"token {token}\n")
        refused = ws.run(*args, timeout=120)
        assert refused.returncode == 2, refused.stderr.decode()[-3000:]
        assert b"cuda/notes.txt" in refused.stderr and token.encode() not in refused.stdout + refused.stderr
        with pytest.raises(ImageNotFound):
            docker_client.images.get(image)
    finally:
        subprocess.run(["docker", "rmi", "-f", image], capture_output=True)


def test_recipe_builds_on_the_classic_builder_with_its_mounts_dropped(python_image, docker_client, canary):
    """Without BuildKit the project's recipe still builds: the runner sends it without the RUN mounts."""
    from runner.config import load_config
    from runner.config.envfile import EnvFile
    from runner.images.builder import Builder
    from runner.context import Context
    from runner.options import BuildOptions
    from runner.secrets import secret_scope
    from runner.ui import Output

    scope = secret_scope([canary], lambda name: True)
    context = Context(load_config(None), EnvFile(None), scope)
    tag = "primus-test/classic-recipe:pytest"
    spec = build_recipe.resolve_build(BuildOptions(flavor="rocm", base=python_image, tag=tag, build_args=("TRACKERS=",)), context)
    try:
        result = run_build(spec, Output(masker=scope.masker), scope.masker, builder=Builder("classic"))
        assert result.builder == "classic" and result.ran >= 1
        image = docker_client.images.get(tag)
        assert image.labels["io.primus-runner.flavor"] == "rocm" and image.attrs["Config"]["User"] == "primus"
        assert "--mount" not in json.dumps(image.history())
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def test_pull_never_with_a_missing_base_exits_2_before_building(tmp_path, docker_client):
    recipe = tmp_path / "recipes"
    (recipe / "rocm").mkdir(parents=True)
    (recipe / "rocm" / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
    ws = Workspace(tmp_path / "ws", config=f"images:\n  dir: {recipe}\n")
    proc = ws.run("build", "--base", "primus-test/not-here:never", "--tag", "primus-test/never:pytest", "--pull", "never", timeout=60)
    assert proc.returncode == 2, proc.stderr.decode()
    assert b"not present locally and the pull policy is 'never'" in proc.stderr


def test_layer_scan_finds_a_value_on_disk_and_in_docker_save(busybox_image, docker_client, canary, tmp_path):
    """Both ways of the layer scan (the daemon's overlay directories, else `docker save`) name the
    one layer that holds the value, and never a base layer."""
    from runner.clients.engine_api import Engine
    from runner.images import scan
    from runner.secrets import secret_scope

    (tmp_path / "value.txt").write_text(f"x{canary['HF_TOKEN']}y\n")
    (tmp_path / "Dockerfile").write_text(f"FROM {busybox_image}\nCOPY value.txt /deep/dir/value.txt\nRUN echo clean > /clean\n")
    tag = "primus-test/layer-scan:pytest"
    docker_client.images.build(path=str(tmp_path), tag=tag, rm=True)
    try:
        engine = Engine()
        image = scan.inspect_image(engine, tag)
        base = scan.inspect_image(engine, busybox_image)
        masker = secret_scope([canary], lambda name: True).masker
        layer = image["RootFS"]["Layers"][len(base["RootFS"]["Layers"])]  # the COPY
        assert scan._layer_dirs(image) is not None  # the local daemon's storage is readable here
        assert scan.scan_layers(engine, image["Id"], base["Id"], masker) == [f"layer {layer}"]
        assert scan._scan_saved(engine, image["Id"], set(base["RootFS"]["Layers"]), masker, 1 << 20) == [f"layer {layer}"]
        assert scan.scan_layers(engine, base["Id"], None, masker) == []
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
