"""The build context: exactly what docker would send (.dockerignore), the staged CA, a stable tar, and a
hostile context refused (exit 2) before anything reads what cannot be read.

Each hostile case runs ``build --file Dockerfile --context DIR --dry-run`` under a CPU-time and
memory limit (work, not wall-clock): reading /dev/zero or a FIFO would hit them.
"""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
import tarfile

import pytest

from runner.images import context as build_context
from runner.images import recipe as build_recipe


def limits():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (60, 60))


def hostile(kind: str, context):
    if kind == "symlink to /dev/zero":
        (context / "data.bin").symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(context / "pipe")
    elif kind == "dangling symlink":
        (context / "gone").symlink_to(context / "no-such-file")
    elif kind == "non-UTF-8 .dockerignore":
        (context / ".dockerignore").write_bytes(b"*.log\n\xff\xfe bad\n")


@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "fifo", "dangling symlink", "non-UTF-8 .dockerignore"])
def test_hostile_context_exits_2(work, kind):
    context = work / "ctx"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM busybox\nCOPY . /app\n")
    hostile(kind, context)
    result = subprocess.run([sys.executable, "-m", "runner", "build", "--file", str(context / "Dockerfile"), "--context", str(context),
                             "--tag", "primus-security/hostile:1", "--dry-run"], cwd=work, capture_output=True, text=True,
                            env={**os.environ, "HOME": str(work), "NO_COLOR": "1"}, timeout=120, preexec_fn=limits)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_a_link_to_a_regular_file_is_sent_as_a_link(work):
    from runner.images.context import context_files, recipe_hash

    context = work / "ctx"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM busybox\n")
    (work / "outside.txt").write_text("not sent")
    (context / "link").symlink_to(work / "outside.txt")
    files = context_files(context, "Dockerfile")
    assert "link" in files
    before = recipe_hash(context, files)
    (work / "outside.txt").write_text("changed, still not sent")
    assert recipe_hash(context, files) == before  # the link is hashed, not what it points to


def test_context_stages_the_ca_bundle_under_its_fixed_name(tmp_path):
    ca = tmp_path / "corp-ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n")
    args, found, _ = build_recipe.host_pip_settings({"REQUESTS_CA_BUNDLE": str(ca), "PIP_CONFIG_FILE": os.devnull}, home=tmp_path)
    assert found == str(ca)
    context = build_recipe.recipes_dir(None)
    spec = build_recipe.BuildSpec("rocm", str(context), "rocm/Dockerfile", "b", "t", (), (), ("rocm/Dockerfile",), found, "h")
    with tarfile.open(fileobj=io.BytesIO(build_context.make_context(spec))) as tar:
        assert tar.extractfile(build_recipe.CA_NAME).read() == ca.read_bytes()
        assert {m.mtime for m in tar.getmembers()} == {0}  # stable context: cache depends on content only
    no_ca = build_recipe.BuildSpec("rocm", str(context), "rocm/Dockerfile", "b", "t", (), (), (), None, "h")
    with tarfile.open(fileobj=io.BytesIO(build_context.make_context(no_ca))) as tar:
        assert tar.extractfile(build_recipe.CA_NAME).read() == b""  # the Dockerfile's COPY still works


def test_dockerignore_matcher_agrees_with_the_docker_sdk(tmp_path):
    """The runner's own matcher (the SDK import is too slow for a cached rebuild) sends exactly what docker would."""
    from docker.utils.build import exclude_paths

    for name in (".env", "a/.env.local", "a/b/x.pem", "keep.txt", "a/keep.py", "a/__pycache__/m.pyc", "x.env",
                 "rocm/Dockerfile", ".git/config", "sub/id_rsa.pub", "sub/notes.md", "deep/a/b/c.key"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    (tmp_path / ".dockerignore").write_text((build_recipe.recipes_dir(None) / ".dockerignore").read_text() + "\n!sub/id_rsa.pub\n/keep.txt\n")
    ours = set(build_context.context_files(tmp_path, "rocm/Dockerfile"))
    sdk = {p for p in exclude_paths(str(tmp_path), build_context.dockerignore(tmp_path), dockerfile="rocm/Dockerfile") if (tmp_path / p).is_file()}
    assert ours == sdk
    assert ".env" not in ours and "a/b/x.pem" not in ours and "sub/id_rsa.pub" in ours


def test_recipe_mounts_are_dropped_for_the_classic_builder_only():
    text = (build_recipe.recipes_dir(None) / "rocm" / "Dockerfile").read_text()
    assert build_context.uses_mounts(text)  # the shipped recipes use a pip cache mount and secret mounts
    classic = build_context.strip_mounts(text)
    assert not build_context.uses_mounts(classic) and "--mount" not in classic
    assert "RUN sh /opt/primus-runner/build/install-trackers.sh" in classic.replace("\\\n    ", "")
    assert build_context.strip_mounts("FROM x\nRUN echo --mount=not-a-flag\n") == "FROM x\nRUN echo --mount=not-a-flag\n"
    assert not build_context.uses_mounts("FROM x\nRUN echo --mount=not-a-flag\n")


def test_a_users_dockerfile_outside_the_context_travels_in_the_tar(tmp_path):
    from runner.images.recipe import STAGED_DOCKERFILE, resolve_build
    from runner.context import Context
    from runner.config import Config
    from runner.config.envfile import EnvFile
    from runner.options import BuildOptions
    from runner.secrets import SecretScope

    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "app.py").write_text("print(1)\n")
    (tmp_path / "ctx" / ".dockerignore").write_text("*.log\n")
    (tmp_path / "ctx" / "debug.log").write_text("x\n")
    (tmp_path / "build.Dockerfile").write_text("FROM scratch\nCOPY app.py /\n")
    context = Context(Config({}), EnvFile(None), SecretScope())
    spec = resolve_build(BuildOptions(file=str(tmp_path / "build.Dockerfile"), context=str(tmp_path / "ctx")), context, host_env={})
    assert spec.flavor is None and spec.dockerfile == STAGED_DOCKERFILE and spec.tag == "primus-runner/ctx:dev"
    assert set(spec.files) == {".dockerignore", "app.py"} and not spec.stage_ca
    assert "io.primus-runner.flavor" not in dict(spec.labels) and dict(spec.labels)["org.opencontainers.image.revision"]
    with tarfile.open(fileobj=io.BytesIO(build_context.make_context(spec))) as tar:
        assert sorted(tar.getnames()) == sorted([".dockerignore", "app.py", STAGED_DOCKERFILE])
        assert tar.extractfile(STAGED_DOCKERFILE).read() == b"FROM scratch\nCOPY app.py /\n"
