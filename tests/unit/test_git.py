"""Nothing of a cloned repository runs through git: a committed directory laid out as a
repository of its own, whose config names a program (``core.fsmonitor=./hook``,
``log.showSignature=true`` with ``gpg.program=./hook``), and the commands that read the
directory's files. The hook writes a canary file; it must never exist."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cli_runner import run_in_clone


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True, env=env).stdout.strip()


def plant_repository(directory: Path, canary: Path, worktree: bool) -> None:
    """``directory`` as a bare layout whose config runs ``./hook`` (which touches ``canary``), holding
    one signed-looking commit (``log.showSignature`` hands its signature to ``gpg.program``)."""
    git(directory.parent, "init", "-q", "--bare", directory.name)
    hook = directory / "hook"
    hook.write_text(f"#!/bin/sh\ntouch {canary}\ncat >/dev/null\n")
    hook.chmod(0o755)
    for key, value in (("log.showSignature", "true"), ("gpg.program", "./hook"), ("core.fsmonitor", "./hook")):
        git(directory, "config", key, value)
    if worktree:  # a repository with a work tree: ls-files reads the index, and fsmonitor with it
        git(directory, "config", "core.bare", "false")
        git(directory, "config", "core.worktree", ".")
    blob = subprocess.run(["git", "-C", str(directory), "hash-object", "-w", "--stdin"], input="x\n", text=True,
                          capture_output=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "-C", str(directory), "mktree"], input=f"100644 blob {blob}\tDockerfile\n", text=True,
                          capture_output=True, check=True).stdout.strip()
    commit = (f"tree {tree}\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n"
              "gpgsig -----BEGIN PGP SIGNATURE-----\n \n x\n -----END PGP SIGNATURE-----\n\nsigned\n")
    sha = subprocess.run(["git", "-C", str(directory), "hash-object", "-t", "commit", "-w", "--stdin"], input=commit,
                         text=True, capture_output=True, check=True).stdout.strip()
    git(directory, "update-ref", "refs/heads/master", sha)


def run(repo: Path, *args: str, cwd: Path | None = None):
    return run_in_clone(repo, *args, cwd=cwd, env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})


def test_build_dry_run_never_runs_the_gpg_program_of_a_repository_in_the_context(clone, tmp_path):
    canary = tmp_path / "PWNED-gpg"
    context = clone / "ctx"
    context.mkdir()
    plant_repository(context, canary, worktree=False)
    (context / "Dockerfile").write_text("FROM scratch\n")
    (clone / ".primus.yaml").write_text("images:\n  file: ctx/Dockerfile\n  context: ctx\n")
    result = run(clone, "build", "--dry-run")
    assert not canary.exists(), f"build --dry-run ran the repository's gpg.program ({result.stderr})"
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [("plan", "--", "true"), ("check",), ("trust", "--show"), ("audit", "."), ("runs",)],
                         ids=lambda a: a[0])
def test_no_command_runs_the_fsmonitor_of_a_repository_it_finds(clone, tmp_path, args):
    canary = tmp_path / "PWNED-fsmonitor"
    sub = clone / "sub"
    plant_repository(sub, canary, worktree=True)
    (sub / ".env").write_text("NCCL_DEBUG=INFO\n")
    (sub / ".env").chmod(0o600)
    result = run(clone, *args, cwd=sub)
    assert not canary.exists(), f"{args[0]} ran the repository's core.fsmonitor ({result.stderr})"
    assert "Traceback" not in result.stderr


def test_the_query_still_answers_in_a_repository_of_your_own(tmp_path):
    from runner.git import git as query, is_tracked

    git(tmp_path, "init", "-q", "repo")
    repo = tmp_path / "repo"
    (repo / "tracked").write_text("x\n")
    git(repo, "add", "tracked")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "one")
    assert is_tracked(repo / "tracked") and not is_tracked(repo / "other")
    assert query(repo, "log", "-1", "--format=%H", "--", ".") == git(repo, "rev-parse", "HEAD")
