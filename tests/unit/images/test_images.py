"""`primus-runner build` decisions that need no daemon: refusals (exit 2 before
anything is sent), context hygiene, the staged CA, forwarded pip settings, dry-run."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from cli_runner import run_cli
from engine_fixtures import assert_no_leak, make_canary

from runner.errors import UsageError
from runner.images import context as build_context
from runner.images import recipe as build_recipe



def run(cwd: Path, *args: str, env: dict | None = None):
    return run_cli(cwd, *args, home=cwd / "home", env={"XDG_CACHE_HOME": str(cwd / "cache"), "DOCKER_HOST": "unix:///nonexistent.sock",
                                                        **(env or {})}, text=False, timeout=60)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "home").mkdir()
    return tmp_path


def recipe(root: Path, dockerfile: str = "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n", ignore: str | None = None) -> Path:
    (root / "recipes" / "rocm").mkdir(parents=True)
    (root / "recipes" / "rocm" / "Dockerfile").write_text(dockerfile)
    if ignore is not None:
        (root / "recipes" / ".dockerignore").write_text(ignore)
    (root / ".primus.yaml").write_text(f"images:\n  dir: {root / 'recipes'}\n")
    return root / "recipes"


def test_secret_build_arg_name_is_refused_with_a_pointer(project):
    canary = make_canary()
    proc = run(project, "build", "--build-arg", f"WANDB_API_KEY={canary['WANDB_API_KEY']}", "--build-arg", "MY_TOKEN=abc", env=canary)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "WANDB_API_KEY is classified secret" in err and "MY_TOKEN is classified secret" in err  # all at once
    assert "--secret WANDB_API_KEY and RUN --mount=type=secret,id=WANDB_API_KEY" in err  # the fix names the safe way
    assert "Traceback" not in err
    assert_no_leak(proc.stdout + proc.stderr, canary, "refusal output")


def test_secret_value_under_a_harmless_name_is_refused(project):
    canary = make_canary()
    proc = run(project, "build", "--build-arg", f"HARMLESS=prefix-{canary['HF_TOKEN']}", env=canary)
    assert proc.returncode == 2
    assert b"contains the value of a secret in scope" in proc.stderr
    assert_no_leak(proc.stdout + proc.stderr, canary, "refusal output")


@pytest.mark.parametrize("name", ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"])
def test_index_url_with_credentials_is_refused(project, name):
    proc = run(project, "build", "--dry-run", "--build-arg", f"{name}=https://user:s3cr3t-pw@pypi.example.com/simple")
    assert proc.returncode == 2
    assert b"embeds a password" in proc.stderr
    assert b"s3cr3t-pw" not in proc.stdout + proc.stderr


def test_index_url_without_credentials_is_forwarded(project):
    proc = run(project, "--json", "build", "--dry-run", "--build-arg", "PIP_INDEX_URL=https://mirror.example.com/simple")
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["build_args"]["PIP_INDEX_URL"] == "https://mirror.example.com/simple"


def test_context_holding_the_env_file_in_use_is_refused(project):
    recipes = recipe(project, "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY job.env /job.env\n")
    (recipes / "job.env").write_text("HF_TOKEN=canary-hf-token-in-context\n")
    proc = run(project, "--env-file", str(recipes / "job.env"), "build", "--dry-run")
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "contains the env file in use (job.env)" in err
    assert "canary-hf-token-in-context" not in err


def test_default_env_file_is_kept_out_by_dockerignore(project):
    """The shipped ignore rules drop .env files, so the same layout with .env is not refused and not sent."""
    recipes = recipe(project, ignore=(build_recipe.recipes_dir(None) / ".dockerignore").read_text())
    (recipes / ".env").write_text("HF_TOKEN=canary-hf-token-ignored\n")
    (recipes / "deploy.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    proc = run(project, "--env-file", str(recipes / ".env"), "--json", "build", "--dry-run")
    assert proc.returncode == 0, proc.stderr.decode()
    files = json.loads(proc.stdout)["files"]
    assert ".env" not in files and "deploy.pem" not in files and "rocm/Dockerfile" in files


def test_context_file_with_a_secret_value_is_refused(project):
    canary = make_canary()
    recipes = recipe(project, f"ARG BASE_IMAGE\nFROM ${{BASE_IMAGE}}\nENV TOKEN={canary['DATABRICKS_TOKEN']}\n")
    proc = run(project, "build", "--dry-run", env=canary)
    assert proc.returncode == 2
    assert b"rocm/Dockerfile" in proc.stderr
    assert_no_leak(proc.stdout + proc.stderr, canary, "refusal output")
    del recipes


def test_dry_run_prints_the_resolved_build_without_a_daemon(project):
    proc = run(project, "--json", "build", "--dry-run", "--flavor", "cuda", "--base", "local/base:1", "--build-arg", "TRACKERS=mlflow-skinny")
    assert proc.returncode == 0, proc.stderr.decode()  # DOCKER_HOST points nowhere: nothing was contacted
    spec = json.loads(proc.stdout)
    assert spec["dockerfile"] == "cuda/Dockerfile" and spec["base"] == "local/base:1"
    assert spec["tag"] == f"primus-runner/cuda:{__import__('runner').__version__}"
    assert spec["build_args"]["BASE_IMAGE"] == "local/base:1" and spec["build_args"]["TRACKERS"] == "mlflow-skinny"
    labels = spec["labels"]
    for key in ("org.opencontainers.image.source", "org.opencontainers.image.revision", "org.opencontainers.image.created",
                "org.opencontainers.image.base.name", "io.primus-runner.flavor", "io.primus-runner.version", "io.primus-runner.recipe-hash"):
        assert key in labels
    assert labels["io.primus-runner.flavor"] == "cuda" and labels["org.opencontainers.image.base.name"] == "local/base:1"
    text = run(project, "build", "--dry-run")
    assert text.returncode == 0 and b"rocm/Dockerfile" in text.stdout and b"BASE_IMAGE=rocm/primus:v26.5" in text.stdout


def test_build_without_daemon_exits_1(project):
    proc = run(project, "build", "--base", "local/base:1")
    assert proc.returncode == 1
    assert b"not reachable" in proc.stderr and b"Traceback" not in proc.stderr


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


def test_pip_ca_precedence(tmp_path):
    a, b = tmp_path / "a.crt", tmp_path / "b.crt"
    a.write_text("a")
    b.write_text("b")
    assert build_recipe.host_pip_settings({"PIP_CERT": str(a), "SSL_CERT_FILE": str(b)}, home=tmp_path)[1] == str(a)
    no_config = {"PIP_CONFIG_FILE": os.devnull}
    assert build_recipe.host_pip_settings({**no_config, "SSL_CERT_FILE": str(b), "PIP_CERT": str(tmp_path / "missing")}, home=tmp_path)[1] == str(b)
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\ncert = {b}\n")
    # pip's own `cert` setting beats REQUESTS_CA_BUNDLE, as it does for pip
    assert build_recipe.host_pip_settings({"PIP_CONFIG_FILE": str(conf), "REQUESTS_CA_BUNDLE": str(a), "XDG_CONFIG_DIRS": str(tmp_path / "none")}, home=tmp_path)[1] == str(b)


def test_host_pip_config_is_forwarded_when_usable_in_a_build(tmp_path):
    xdg = tmp_path / "xdg"
    (xdg / "pip").mkdir(parents=True)
    (xdg / "pip" / "pip.conf").write_text("[global]\nconstraint = /etc/xdg/pip/constraints.txt\nindex-url = https://mirror.example.com/simple\n")
    (tmp_path / ".config" / "pip").mkdir(parents=True)
    (tmp_path / ".config" / "pip" / "pip.conf").write_text(
        "[global]\nfind-links = /opt/wheels\nextra-index-url = file:///opt/pypi/simple https://extra.example.com/simple\ntrusted-host = mirror.example.com\n"
    )
    env = {"XDG_CONFIG_DIRS": str(xdg), "PIP_DEFAULT_TIMEOUT": "180", "HTTPS_PROXY": "http://proxy.example.com:3128"}
    args, _, notes = build_recipe.host_pip_settings(env, home=tmp_path)
    assert args["PIP_INDEX_URL"] == "https://mirror.example.com/simple"
    assert args["PIP_EXTRA_INDEX_URL"] == "https://extra.example.com/simple"  # the host-local file:// index is dropped
    assert args["PIP_TRUSTED_HOST"] == "mirror.example.com"
    assert args["PIP_DEFAULT_TIMEOUT"] == "180"
    assert args["HTTPS_PROXY"] == "http://proxy.example.com:3128"
    assert "PIP_FIND_LINKS" not in args and not any("constraint" in k.lower() for k in args)
    assert any("host-local" in n for n in notes)


def test_host_index_with_password_is_not_forwarded(tmp_path):
    args, _, notes = build_recipe.host_pip_settings({"PIP_INDEX_URL": "https://u:hunter2-pw@private.example.com/simple"}, home=tmp_path)
    assert "PIP_INDEX_URL" not in args
    assert any("embeds a password" in n for n in notes) and not any("hunter2" in n for n in notes)


def test_bare_build_arg_takes_the_host_value():
    assert build_recipe.parse_build_args(["A=1", "B"], {"B": "2"}) == [("A", "1"), ("B", "2")]
    with pytest.raises(UsageError):
        build_recipe.parse_build_args(["C"], {})
    with pytest.raises(UsageError):
        build_recipe.parse_build_args(["=x"], {})


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


# ------------------------------------------------------------------ BuildKit: secrets, mounts, builders

def test_recipe_mounts_are_dropped_for_the_classic_builder_only():
    text = (build_recipe.recipes_dir(None) / "rocm" / "Dockerfile").read_text()
    assert build_context.uses_mounts(text)  # the shipped recipes use a pip cache mount and secret mounts
    classic = build_context.strip_mounts(text)
    assert not build_context.uses_mounts(classic) and "--mount" not in classic
    assert "RUN sh /opt/primus-runner/build/install-trackers.sh" in classic.replace("\\\n    ", "")
    assert build_context.strip_mounts("FROM x\nRUN echo --mount=not-a-flag\n") == "FROM x\nRUN echo --mount=not-a-flag\n"
    assert not build_context.uses_mounts("FROM x\nRUN echo --mount=not-a-flag\n")


def test_secret_names_from_flags_and_config_and_all_missing_at_once():
    from runner.config import Config
    from runner.errors import ConfigError
    from runner.options import BuildOptions

    config = Config({"images": {"secrets": ["PIP_INDEX_URL", "HF_TOKEN"]}})
    names = build_recipe.secret_names(BuildOptions(secrets=("HF_TOKEN", "GH_TOKEN")), config)
    assert names == ("HF_TOKEN", "GH_TOKEN", "PIP_INDEX_URL")
    with pytest.raises(UsageError):
        build_recipe.secret_names(BuildOptions(secrets=("id=x,src=/etc/passwd",)), None)
    found = build_recipe.secret_values(["HF_TOKEN"], {"HF_TOKEN": "from-env"}, {"HF_TOKEN": "from-file"})
    assert [(n, v.reveal()) for n, v in found] == [("HF_TOKEN", "from-env")]  # the environment first, like every secret
    assert build_recipe.secret_values(["GH_TOKEN"], {}, {"GH_TOKEN": "from-file"})[0][1].reveal() == "from-file"
    with pytest.raises(ConfigError) as missing:
        build_recipe.secret_values(["A_ONE", "HF_TOKEN", "B_TWO"], {"HF_TOKEN": "x"}, {})
    assert missing.value.exit_code == 2 and [p.message.split()[2] for p in missing.value.problems] == ["A_ONE", "B_TWO"]


def test_builder_command_holds_names_and_its_env_the_values():
    from runner.images.builder import Builder, render_command
    from runner.secrets import Secret

    spec = build_recipe.BuildSpec(None, "/ctx", "Dockerfile", None, "me/app:1", (("A", "1"),), (), ("Dockerfile",), None, "h", secrets=("HF_TOKEN",))
    builder = Builder("buildkit", "/usr/bin/docker")
    argv = builder.command(spec, {"l": "v"}, "/tmp/iid")
    assert argv[:2] == ["/usr/bin/docker", "build"] and argv[-1] == "-"
    assert "--secret" in argv and "id=HF_TOKEN,env=HF_TOKEN" in argv and "--progress=plain" in argv
    env = builder.env([("HF_TOKEN", Secret("canary-value-123456"))], base={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "DOCKER_BUILDKIT": "1", "HF_TOKEN": "canary-value-123456"}
    assert "canary-value-123456" not in " ".join(argv)
    shown = render_command(builder, argv, spec.secrets)
    assert shown.startswith("DOCKER_BUILDKIT=1 HF_TOKEN=<from env> /usr/bin/docker build") and "canary" not in shown
    podman = Builder("podman", "/usr/bin/podman").command(spec, {}, "/tmp/iid")
    assert "id=HF_TOKEN,env=HF_TOKEN" in podman and "--progress=plain" not in podman


def test_buildkit_plain_progress_counts_steps_cache_hits_and_runs(capsys):
    from runner.images.stream import Progress
    from runner.ui import Output

    progress = Progress(Output(color=False), "t")
    for line in [
        "#1 [internal] load build definition from Dockerfile", "#1 DONE 0.0s",
        "#4 [stage-0 1/3] FROM docker.io/library/busybox", "#5 [stage-0 2/3] COPY x /x", "#6 [stage-0 3/3] RUN make",
        "#4 DONE 0.0s", "#5 CACHED", "#6 0.464 compiling", "#6 DONE 2.5s", "#7 exporting to image", "#7 DONE 0.1s",
    ]:
        progress.buildkit_line(line)
    progress.close()
    assert (progress.total, progress.cache_hits, progress.ran) == (3, 1, 1)
    err = capsys.readouterr().err
    assert "[1/3] base    FROM" in err and "[2/3] cached  COPY x /x" in err and "[3/3] run     RUN make (2.5s)" in err
    assert "[3/3] running RUN make\n    compiling\n" in err  # a step's output as it comes, under its name
    assert "internal" not in err  # the builder's own vertices are not the user's steps


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


def test_builder_status_names_a_builder_or_what_it_needs():
    from runner.images import builder_status

    status = builder_status()
    assert status["classic"] is True
    assert (status["buildkit"] and status["builder"]) or ("buildx" in status["needs"] and "/usr/bin/docker" in status["needs"])
