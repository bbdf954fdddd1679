"""`primus-runner build` decisions that need no daemon, through the CLI: refusals (exit 2 before
anything is sent), context hygiene, dry-run, and the builder it would use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_cli
from engine_fixtures import assert_no_leak, make_canary

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


@pytest.fixture
def docker_clis(tmp_path, monkeypatch):
    """``docker_clis(script)``: the only Docker CLI this process can find is ``script`` (None: there is none).
    Debian's fixed path is pointed into the test's directory, so what the host has installed plays no part."""
    from runner.images import builder

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(builder, "DEBIAN_CLI", str(tmp_path / "debian" / "docker"))

    def use(script: str | None) -> Path:
        builder.find_buildkit.cache_clear()  # a process remembers its answer: each case asks afresh
        bin_dir = tmp_path / f"bin{len(list(tmp_path.glob('bin*')))}"
        bin_dir.mkdir()
        if script is not None:
            (bin_dir / "docker").write_text("#!/bin/sh\n" + script)
            (bin_dir / "docker").chmod(0o755)
        monkeypatch.setenv("PATH", str(bin_dir))
        return bin_dir / "docker"
    yield use
    builder.find_buildkit.cache_clear()  # nor does a later test get this one's stand-in


def test_builder_status_names_the_builder_it_found(docker_clis):
    from runner.images import builder_status

    cli = docker_clis('[ "$1" = "--version" ] && echo "Docker version 20.10.24, build x"\n')
    status = builder_status()
    assert (status["classic"], status["buildkit"], status["secrets"], status["needs"]) == (True, True, True, None)
    assert status["builder"] == f"buildkit ({cli}, docker CLI 20.10, DOCKER_BUILDKIT=1)"
    cli = docker_clis('[ "$1" = "--version" ] && echo "Docker version 27.1.0" && exit 0\n'
                      '[ "$1 $2" = "buildx version" ] && echo "github.com/docker/buildx v0.24.0 abc" && exit 0\nexit 1\n')
    assert builder_status()["builder"] == f"buildkit ({cli}, buildx v0.24.0)"


@pytest.mark.parametrize("script", [None, '[ "$1" = "--version" ] && echo "Docker version 27.1.0" && exit 0\nexit 1\n'],
                         ids=["no CLI", "a CLI without buildx"])
def test_builder_status_without_buildkit_says_what_it_needs(docker_clis, script):
    from runner.images import builder_status
    from runner.images.builder import NEEDS

    docker_clis(script)
    status = builder_status()
    assert (status["classic"], status["buildkit"], status["builder"], status["secrets"]) == (True, False, None, False)
    assert status["needs"] == NEEDS and "buildx" in NEEDS and "/usr/bin/docker" in NEEDS
