"""The build context (runner.images.context): exactly what docker would send (.dockerignore), the staged
CA, a stable tar, the env file and secret values kept out (named, never shown), the key and base images
that decide a build, and a hostile context refused (exit 2) before anything reads what cannot be read.

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

from engine_fixtures import assert_no_leak, make_canary
from runner.errors import ConfigError
from runner.images import context as build_context
from runner.images import recipe as build_recipe
from runner.secrets import Masker


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


# ------------------------------------------------------------------ what is sent, what is refused, what decides the image

def user_spec(context, **kw) -> build_recipe.BuildSpec:
    files = kw.pop("files", tuple(build_context.context_files(context, "Dockerfile")))
    fields = dict(flavor=None, context_dir=str(context), dockerfile="Dockerfile", base=None, tag="t:1", build_args=(),
                  labels=(), files=files, ca_source=None, recipe_hash="h", stage_ca=False)
    return build_recipe.BuildSpec(**{**fields, **kw})


def write(root, files: dict[str, str]):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_last_matching_rule_wins_and_the_dockerfile_and_dockerignore_are_always_sent(tmp_path):
    write(tmp_path, {"Dockerfile": "FROM x\n", "a.log": "", "keep.log": "", "deep/x/y.tmp": "", "deep/z.txt": "", "data/big.bin": "",
                     ".dockerignore": "# comments and blank lines are not rules\n\n*.log\n!keep.log\n**/*.tmp\ndata\nDockerfile\n.dockerignore\n"})
    assert build_context.dockerignore(tmp_path) == ["*.log", "!keep.log", "**/*.tmp", "data", "Dockerfile", ".dockerignore"]
    assert build_context.context_files(tmp_path, "Dockerfile") == [".dockerignore", "Dockerfile", "deep/z.txt", "keep.log"]


def test_a_dockerignore_that_is_not_a_small_regular_file_is_exit_2(tmp_path):
    (tmp_path / ".dockerignore").mkdir()
    with pytest.raises(ConfigError, match="is not a regular file") as refused:
        build_context.dockerignore(tmp_path)
    assert refused.value.exit_code == 2
    (tmp_path / ".dockerignore").rmdir()
    (tmp_path / ".dockerignore").write_bytes(b"#" * (build_context.MAX_DOCKERIGNORE + 1))
    with pytest.raises(ConfigError, match="is over 1,048,576 bytes"):
        build_context.dockerignore(tmp_path)
    (tmp_path / ".dockerignore").unlink()
    assert build_context.dockerignore(tmp_path) == []  # none: everything is sent


def test_many_entries_that_cannot_be_sent_are_named_five_and_counted(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM x\n")
    for i in range(7):
        (tmp_path / f"gone{i}").symlink_to(tmp_path / "nothing")
    with pytest.raises(ConfigError) as refused:
        build_context.context_files(tmp_path, "Dockerfile")
    text = str(refused.value)
    assert text.count("is a symbolic link to nothing") == 5 and "(and 2 more)" in text


def test_the_env_file_in_use_is_refused_only_when_it_would_be_sent(tmp_path):
    write(tmp_path, {"Dockerfile": "FROM x\n", "app/.env": "A=1\n", "ignored.env": "A=1\n", ".dockerignore": "ignored.env\n"})
    files = build_context.context_files(tmp_path, "Dockerfile")
    with pytest.raises(ConfigError, match=r"contains the env file in use \(app/\.env\)") as refused:
        build_context.refuse_env_file(tmp_path, files, str(tmp_path / "app" / ".env"))
    assert "add 'app/.env' to" in refused.value.problems[0].hint
    build_context.refuse_env_file(tmp_path, files, str(tmp_path / "ignored.env"))  # .dockerignore keeps it out
    build_context.refuse_env_file(tmp_path, files, str(tmp_path.parent / "elsewhere.env"))  # outside the context
    build_context.refuse_env_file(tmp_path, files, None)


def test_a_context_file_holding_a_secret_value_is_refused_by_name_never_by_value(tmp_path):
    value = make_canary()["HF_TOKEN"]
    masker = Masker([("HF_TOKEN", value)])
    write(tmp_path, {"Dockerfile": "FROM x\n", "clean.txt": "nothing here\n", "conf/settings.ini": f"token = {value}\n",
                     "real-secret-file": "x\n"})
    (tmp_path / "pointer").symlink_to(tmp_path / "conf" / "settings.ini")  # sent as a link: its text is a path, no value
    files = build_context.context_files(tmp_path, "Dockerfile")
    with pytest.raises(ConfigError) as refused:
        build_context.refuse_secret_content(tmp_path, files, masker)
    text = str(refused.value) + repr(refused.value) + str(refused.value.problems[0].hint)
    assert "contain the value of a secret in scope: conf/settings.ini" in text and "pointer" not in text
    assert_no_leak(text, [value], "the refusal")
    outside = tmp_path.parent / f"{tmp_path.name}.Dockerfile"  # a user's Dockerfile outside the context travels too
    outside.write_text(f"FROM x\nENV T={value}\n")
    clean = [f for f in files if f != "conf/settings.ini"]
    with pytest.raises(ConfigError, match=str(outside)):
        build_context.refuse_secret_content(tmp_path, clean, masker, extra=[str(outside)])
    build_context.refuse_secret_content(tmp_path, clean, masker)
    build_context.refuse_secret_content(tmp_path, files, Masker())  # nothing in scope: nothing to refuse


def test_the_tar_is_the_same_bytes_whoever_owns_the_files_and_whenever_they_changed(tmp_path):
    write(tmp_path, {"Dockerfile": "FROM x\nRUN --mount=type=cache,target=/c true\n", "app.py": "print(1)\n"})
    spec = user_spec(tmp_path)
    first = build_context.make_context(spec)
    os.utime(tmp_path / "app.py", (1, 1))
    assert build_context.make_context(spec) == first
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in tar.getmembers()} == {(0, 0, "", "", 0)}
        assert tar.extractfile("Dockerfile").read() == (tmp_path / "Dockerfile").read_bytes()  # a user's file is never rewritten
    with tarfile.open(fileobj=io.BytesIO(build_context.make_context(spec, classic_recipe=True))) as tar:
        assert tar.extractfile("Dockerfile").read() == b"FROM x\nRUN true\n"


def test_the_build_key_follows_what_decides_the_image_and_names_secrets_not_values(tmp_path):
    write(tmp_path, {"Dockerfile": "FROM x\n"})
    spec = user_spec(tmp_path)
    tar = build_context.make_context(spec)
    key = build_context.build_key(spec, tar, "sha256:base")
    assert build_context.build_key(spec, tar, "sha256:base") == key
    changed = [build_context.build_key(spec, tar + b"\0", "sha256:base"), build_context.build_key(spec, tar, "sha256:other"),
               build_context.build_key(user_spec(tmp_path, build_args=(("A", "1"),)), tar, "sha256:base"),
               build_context.build_key(user_spec(tmp_path, labels=(("l", "1"),)), tar, "sha256:base"),
               build_context.build_key(user_spec(tmp_path, secrets=("HF_TOKEN",)), tar, "sha256:base")]
    assert len({key, *changed}) == 6
    assert build_context.build_key(user_spec(tmp_path, tag="other:2", recipe_hash="x"), tar, "sha256:base") == key


def test_the_bases_are_the_from_images_with_args_substituted_not_stages_or_scratch(tmp_path):
    write(tmp_path, {"Dockerfile": "ARG BASE=rocm/primus:v1\nARG TAG\nFROM --platform=linux/amd64 ${BASE} AS build\n"
                                   "FROM build AS test\nFROM scratch\nFROM \\\n  python:$TAG\nFROM rocm/primus:v1\n"
                                   "ARG LATE=ignored:1\nFROM ${LATE}\n"})
    assert build_context.base_images(user_spec(tmp_path)) == ["rocm/primus:v1", "python:"]
    assert build_context.base_images(user_spec(tmp_path, build_args=(("BASE", "mine:2"), ("TAG", "3.12")))) == ["mine:2", "python:3.12", "rocm/primus:v1"]
