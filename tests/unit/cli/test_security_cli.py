"""Adversarial review, command line: put a canary where the runner echoes input back.

Each case plants unique secret values in three places (a forwarded secret in the
host environment, a secret only in the env file, a secret in the host environment
that is never forwarded, like ``GITHUB_TOKEN``) and then feeds one of those VALUES
to the runner in a non-secret slot (a public variable, a flag, a container name,
an unknown argument), on the success path and on every error path. Whatever the
runner prints, the value must not be in it: every secret in scope is masked,
including in messages printed before a command has loaded its config.
"""

from __future__ import annotations

import json

import uuid

import pytest

from cli_runner import run_cli
from plan_factory import write_project
from engine_fixtures import assert_no_leak


def _canary(tag: str) -> str:
    return f"cnry{tag}{uuid.uuid4().hex[:14]}"


FORWARDED = _canary("fwd")  # HF_TOKEN, in the host env, forwarded
FILE_ONLY = _canary("file")  # WANDB_API_KEY, only in ./.env
UNFORWARDED = _canary("gh")  # GITHUB_TOKEN, in the host env, not in the allowlist
VALUES = {"HF_TOKEN": FORWARDED, "WANDB_API_KEY": FILE_ONLY, "GITHUB_TOKEN": UNFORWARDED}


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path, "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n"
                         "    env: [HF_TOKEN, WANDB_API_KEY, PRIMUS_X]\n", f"WANDB_API_KEY={FILE_ONLY}\n")


def run(args, cwd):
    # The real Docker daemon when there is one (`down`/`logs` then echo the name back); nothing is started.
    return run_cli(cwd, *args, env={"HF_TOKEN": FORWARDED, "GITHUB_TOKEN": UNFORWARDED}, timeout=60)


def _slots(value: str) -> list[list[str]]:
    """Argument lists that carry ``value`` in a non-secret slot."""
    return [
        ["plan", "--env", f"PRIMUS_X={value}", "--", "true"],  # same value as a secret, under a public name
        ["--json", "plan", "--env", f"PRIMUS_X={value}", "--", "true"],
        ["--verbose", "plan", "--", "echo", value],  # in the job's command
        ["up", "--dry-run", "--workdir", f"/{value}", "--", "true"],
        ["plan", "--memory", value, "--", "true"],  # schema error quoting the flag, before the masker is built
        ["plan", "--cpus", value, "--", "true"],
        ["plan", "--shm-size", value, "--", "true"],
        ["plan", "--image", f"Reg/{value}:x", "--", "true"],  # invalid image reference
        ["plan", "-v", f"/nonexistent/{value}:/x", "--", "true"],  # missing mount source
        ["--verbose", "up", "--dry-run", "--name", value, "--", "true"],
        ["down", value],  # no masker of its own: "no container named …"
        ["--json", "logs", value],
        ["status", value],
        ["cancel", value],
        ["up", "--gpu", value],  # argparse's own error quotes the bad choice
        ["logs", "x", value],  # argparse: unrecognized arguments
        ["--verbose", "audit", f"/nonexistent/{value}"],
        ["build", "--build-arg", f"PUBLIC={value}", "--dry-run"],  # a secret value under a public build-arg name
        ["submit", "--dry-run", "--partition", value, "--", "true"],
    ]


@pytest.mark.parametrize("which", sorted(VALUES))
@pytest.mark.parametrize("index", range(len(_slots("x"))))
def test_a_secret_value_in_a_public_slot_is_never_printed(project, which, index):
    args = _slots(VALUES[which])[index]
    result = run(args, project)
    assert "Traceback" not in result.stderr
    assert_no_leak(result.stdout, VALUES, f"stdout of {args[:2]} ({which} value)")
    assert_no_leak(result.stderr, VALUES, f"stderr of {args[:2]} ({which} value)")
    for path in project.rglob("*"):
        if path.is_file() and path.name != ".env":
            assert_no_leak(path.read_bytes(), VALUES, f"{path.relative_to(project)} written by {args[:2]}")


def test_the_probe_would_see_a_leak(project):
    """The same probe with a value that is no secret prints it: the cases above test masking, not silence."""
    plain = _canary("plain")
    result = run(["plan", "--env", f"PRIMUS_X={plain}", "--", "true"], project)
    assert result.returncode == 0, result.stderr
    assert plain in result.stdout


def test_a_password_inside_a_public_url_is_masked(project):
    """MLFLOW_TRACKING_URI / HTTPS_PROXY are public by name, but a user:password@ in them is a secret."""
    password = _canary("pw") + "@x"  # percent-encoded in the URL, as a URL requires
    quoted = password.replace("@", "%40")
    (project / ".primus.yaml").write_text(
        "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n    env: [MLFLOW_TRACKING_URI, HTTPS_PROXY]\n"
    )
    env = {"MLFLOW_TRACKING_URI": f"https://bob:{quoted}@mlflow.example", "HTTPS_PROXY": f"http://u:{quoted}@proxy:3128"}
    for args in (["plan", "--", "true"], ["--json", "plan", "--", "true"], ["plan", "--", "echo", password]):
        result = run_cli(project, *args, env=env, timeout=60)
        assert result.returncode == 0, result.stderr
        # A public variable whose value holds a secret travels as a secret: shown as *** whole.
        if args[0] == "--json":
            assert json.loads(result.stdout)["env"]["MLFLOW_TRACKING_URI"] == "***"
        else:
            assert "MLFLOW_TRACKING_URI=***" in result.stdout
        assert_no_leak(result.stdout + result.stderr, {"URL password": password, "quoted": quoted}, f"{args[:2]}")
