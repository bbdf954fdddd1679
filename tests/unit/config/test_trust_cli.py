"""The project trust boundary, driven as a user drives it: a cloned repository's
``.primus.yaml`` and ``.env`` cannot run programs, read files, unmark secrets or ship
the home directory until ``primus-runner trust``. Canaries: a file only the reference's
program would create, a private key only the reference would read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_in_clone
from engine_fixtures import assert_no_leak


@pytest.fixture
def clone(tmp_path):
    """A freshly cloned repository (cwd) and a home of its own, with a private key in it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\ncanary-private-key-3f9a1c7e5b2d4086\n-----END OPENSSH PRIVATE KEY-----\n")
    key.chmod(0o600)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    return repo


def run(repo: Path, *args: str, env: dict | None = None, cwd: Path | None = None):
    return run_in_clone(repo, *args, cwd=cwd, env={"DOCKER_HOST": "unix:///nonexistent/docker.sock", **(env or {})})


def _pwned_config(repo: Path) -> Path:
    pwned = repo.parent / "pwned"
    (repo / ".primus.yaml").write_text(
        "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n    env: [HF_TOKEN]\n"
        f"secrets:\n  HF_TOKEN: \"cmd:sh -c 'id > {pwned}'\"\n")
    return pwned


@pytest.mark.parametrize("args", [
    ("plan", "--", "true"), ("check",), ("check", "--online"), ("audit", str(Path("/dev/null"))),
    ("logs", "trust-no-such-container"), ("up", "--", "true"), ("submit", "--dry-run", "--", "true"),
    ("build", "--dry-run"),
], ids=lambda a: "-".join(a[:2]))
def test_a_cmd_reference_of_an_untrusted_file_runs_for_no_command(clone, args):
    pwned = _pwned_config(clone)
    result = run(clone, *args)
    assert not pwned.exists(), f"{args[0]} ran the repository's program: {result.stderr}"
    if args[0] not in ("audit",):  # audit still scans, with the built-in names, when the config cannot be used
        assert result.returncode == 2, result.stderr
        assert "secrets.HF_TOKEN" in result.stderr and "primus-runner trust" in result.stderr
        assert str(clone / ".primus.yaml") in result.stderr
    assert "Traceback" not in result.stderr


def test_after_trust_it_works_plan_still_runs_nothing_and_an_edit_needs_trust_again(clone):
    pwned = _pwned_config(clone)
    show = run(clone, "trust", "--show")
    assert show.returncode == 0 and "untrusted" in show.stdout and "secrets.HF_TOKEN" in show.stdout, show
    assert not (clone.parent / "state" / "primus-runner" / "trusted.json").exists(), "--show records nothing"
    trusted = run(clone, "trust")
    assert trusted.returncode == 0 and "trusted" in trusted.stdout, trusted.stderr
    plan = run(clone, "--json", "plan", "--", "true")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["env_sources"]["HF_TOKEN"]["source"].startswith("cmd:sh -c")  # where it would come from
    assert not pwned.exists(), "plan never runs a reference, even a trusted one"
    check = run(clone, "check")
    assert pwned.exists(), f"trusted: check resolves the reference ({check.stderr})"
    pwned.unlink()
    with open(clone / ".primus.yaml", "a") as fh:
        fh.write("# an edit after trust\n")
    again = run(clone, "check")
    assert again.returncode == 2 and "primus-runner trust" in again.stderr and not pwned.exists()
    assert "changed" in run(clone, "trust", "--show").stdout


@pytest.mark.parametrize("where", ["before", "after", "env"])
def test_trust_project_for_pipelines_either_place(clone, where):
    pwned = _pwned_config(clone)
    args = {"before": ("--trust-project", "check"), "after": ("check", "--trust-project"), "env": ("check",)}[where]
    run(clone, *args, env={"PRIMUS_RUNNER_TRUST_PROJECT": "1"} if where == "env" else None)
    assert pwned.exists()


def test_a_file_reference_to_your_private_key_is_refused(clone):
    (clone / ".primus.yaml").write_text(
        "container:\n  options:\n    env: [WANDB_API_KEY]\nsecrets:\n  WANDB_API_KEY: file:~/.ssh/id_ed25519\n")
    key = (clone.parent / "home" / ".ssh" / "id_ed25519").read_text().splitlines()[1]
    for args in (("plan", "--", "true"), ("check",), ("up", "--", "true")):
        result = run(clone, *args)
        assert result.returncode == 2 and "secrets.WANDB_API_KEY" in result.stderr, result.stderr
        assert_no_leak(result.stdout + result.stderr, {"key": key}, " ".join(args))


def test_unmarking_a_secret_is_refused_and_its_value_stays_masked(clone):
    token = "ghp_" + "c4n4ry" * 6
    (clone / ".primus.yaml").write_text("passthrough:\n  prefixes: [GITHUB_]\n  secrets: ['!GITHUB_TOKEN']\n")
    result = run(clone, "plan", "--", "true", env={"GITHUB_TOKEN": token})
    assert result.returncode == 2 and "passthrough.secrets[0]" in result.stderr and "primus-runner trust" in result.stderr
    assert_no_leak(result.stdout + result.stderr, {"GITHUB_TOKEN": token}, "plan")
    # Under GitHub Actions the early masker registers the value (the runner hides it in the log).
    ci = run(clone, "plan", "--", "true", env={"GITHUB_TOKEN": token, "GITHUB_ACTIONS": "true", "CI": "true", "PRIMUS_RUNNER_ADD_MASK": "1"})
    assert f"::add-mask::{token}" in ci.stdout, ci.stdout
    shown = "\n".join(line for line in (ci.stdout + ci.stderr).splitlines() if not line.startswith("::add-mask::"))
    assert_no_leak(shown, {"GITHUB_TOKEN": token}, "plan under GitHub Actions")


def test_a_build_context_of_your_home_is_refused(clone):
    (clone / "Dockerfile").write_text("FROM scratch\n")
    (clone / ".primus.yaml").write_text("images:\n  file: Dockerfile\n  context: \"~\"\n")
    result = run(clone, "--json", "build", "--dry-run")
    assert result.returncode == 2 and "images.context" in result.stderr and "primus-runner trust" in result.stderr
    assert ".ssh" not in result.stdout and "id_ed25519" not in result.stdout


def test_slurm_accounting_opt_in_is_refused(clone):
    (clone / ".primus.yaml").write_text("slurm:\n  allow_env_in_accounting: true\n")
    for args in (("plan", "--", "true"), ("submit", "--dry-run", "--", "true")):
        result = run(clone, *args)
        assert result.returncode == 2 and "slurm.allow_env_in_accounting" in result.stderr, result.stderr


def test_plan_from_a_subdirectory_names_every_file_it_loaded(clone):
    (clone / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: from-the-project\n")
    (clone.parent / "extra.yaml").write_text("container:\n  options:\n    env: [FROM_ENV_LAYER]\n")
    sub = clone / "src" / "deep"
    sub.mkdir(parents=True)
    env = {"PRIMUS_RUNNER_CONFIG": str(clone.parent / "extra.yaml")}
    text = run(clone, "--verbose", "plan", "--", "true", env=env, cwd=sub)  # the full view names every file
    assert text.returncode == 0, text.stderr
    assert "from-the-project" in text.stdout
    line = next(line for line in text.stdout.splitlines() if line.startswith("config files"))
    assert str(clone / ".primus.yaml") in line and str(clone.parent / "extra.yaml") in line
    doc = json.loads(run(clone, "--json", "plan", "--", "true", env=env, cwd=sub).stdout)
    assert doc["config_files"][1:3] == [str(clone / ".primus.yaml"), str(clone.parent / "extra.yaml")]


def test_env_file_entries_not_forwarded_are_reported_by_name(clone):
    (clone / ".primus.yaml").write_text("container:\n  gpu: none\n")
    (clone / ".env").write_text("NCCL_DEBUG=INFO\nMY_SETTING=value-canary-1234\n")
    (clone / ".env").chmod(0o600)
    result = run(clone, "--json", "plan", "--", "true")
    doc = json.loads(result.stdout)
    skipped = {item["name"]: item["reason"] for item in doc["skipped"]}
    assert skipped.get("NCCL_DEBUG") == skipped.get("MY_SETTING") == "only in the env file, not allowlisted"
    assert "in the env file but not allowlisted, not forwarded: MY_SETTING, NCCL_DEBUG" in result.stderr
    assert "value-canary-1234" not in result.stdout + result.stderr


def test_an_untrusted_env_file_may_not_name_an_endpoint(clone):
    (clone / ".env").write_text("MLFLOW_TRACKING_URI=http://127.0.0.1:9\n")
    result = run(clone, "plan", "--", "true")
    assert result.returncode == 2 and "MLFLOW_TRACKING_URI" in result.stderr and ".env:1" in result.stderr
    assert run(clone, "trust").returncode == 0
    assert run(clone, "plan", "--gpu", "none", "--", "true").returncode == 0


def test_inside_a_primus_checkout_its_runner_file_is_a_layer_and_plan_names_it(clone):
    import shutil

    (clone / "runner").mkdir()
    (clone / "runner" / "primus-cli-direct.sh").write_text("#!/bin/bash\n")
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "primus-runner.primus.yaml"
    shutil.copy(fixture, clone / "runner" / ".primus.yaml")
    (clone.parent / "home" / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: mine:1\n")
    result = run(clone, "--json", "plan", "--", "true")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["config_files"][1:3] == [str(clone / "runner" / ".primus.yaml"), str(clone.parent / "home" / ".primus.yaml")]
    assert doc["image"] == "mine:1"  # ~/.primus.yaml above the launcher's file, as the launcher orders them
    assert doc["privileged"] is True and doc["name"].startswith("primus-training")  # the launcher's own settings
    skipped = {item["name"] for item in doc["skipped"]}
    assert {"REBUILD_PRIMUS_TURBO", "ENABLE_NUMA_BINDING"} <= skipped  # its allowlist, reported as unset
    # The checkout's file is a project file: untrusted until trusted.
    with open(clone / "runner" / ".primus.yaml", "a") as fh:
        fh.write("secrets:\n  HF_TOKEN: pass:ml/hf\n")
    refused = run(clone, "plan", "--", "true")
    assert refused.returncode == 2 and str(clone / "runner" / ".primus.yaml") in refused.stderr


def test_trust_json_and_nothing_to_trust(clone):
    empty = run(clone, "trust")
    assert empty.returncode == 0 and "nothing to trust" in empty.stderr
    (clone / ".primus.yaml").write_text("secrets:\n  HF_TOKEN: pass:ml/hf\n")
    (clone / ".env").write_text("NCCL_DEBUG=INFO\n")
    shown = json.loads(run(clone, "--json", "trust", "--show").stdout)
    assert shown["recorded"] is False
    assert [(f["kind"], f["status"]) for f in shown["files"]] == [("project", "untrusted"), ("env-file", "untrusted")]
    assert any("secrets.HF_TOKEN" in ask for ask in shown["files"][0]["asks"])
    done = json.loads(run(clone, "trust", "--json").stdout)
    assert done["recorded"] is True and {f["status"] for f in done["files"]} == {"trusted"}
    revoked = json.loads(run(clone, "trust", "--revoke", "--json").stdout)
    assert {f["status"] for f in revoked["files"]} == {"untrusted"}
    assert run(clone, "plan", "--", "true").returncode == 2
