"""``audit``: the secrets in scope looked for where they must never be: exit 0 clean, 4 on a leak (naming
the secret, never its value), 2 for a target it could not read (a symlink, an unreadable file, a missing path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from engine_fixtures import assert_no_leak
from ux_helpers import NO_DOCKER


def audit(work, *targets: str, secret: str):
    env = {**os.environ, "HOME": str(work), "NO_COLOR": "1", "HF_TOKEN": secret}
    return subprocess.run([sys.executable, "-m", "runner", "--json", "audit", *targets], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def secret() -> str:
    return f"canary-audit-{uuid.uuid4().hex}"


def test_a_symlink_target_is_an_error_not_clean(work, secret):
    (work / "leaky.txt").write_text(f"token={secret}\n")
    (work / "link.txt").symlink_to(work / "leaky.txt")
    result = audit(work, "link.txt", secret=secret)
    assert result.returncode == 2, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["clean"] is False and any("symbolic link" in e for e in report["errors"])
    assert_no_leak(result.stdout + result.stderr, [secret], "audit output")


def test_an_unreadable_target_is_an_error_not_clean(work, secret):
    """/proc/PID/mem is a regular file whose first bytes cannot be read (EIO), even as root."""
    target = f"/proc/{os.getpid()}/mem"
    result = audit(work, target, secret=secret)
    assert result.returncode == 2, result.stdout + result.stderr
    assert json.loads(result.stdout)["clean"] is False
    assert "cannot be read" in result.stderr


def test_a_missing_path_exits_2(work, secret):
    result = audit(work, "./missing", secret=secret)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "missing" in result.stderr


def test_a_readable_file_is_still_audited(work, secret):
    (work / "leaky.txt").write_text(f"token={secret}\n")
    result = audit(work, "leaky.txt", secret=secret)
    assert result.returncode == 4 and "HF_TOKEN" in result.stdout
    assert_no_leak(result.stdout + result.stderr, [secret], "audit output")


def test_a_clean_file_is_exit_0_and_says_what_was_looked_for(work, secret):
    (work / "fine.txt").write_text("nothing to see\n")
    result = audit(work, "fine.txt", secret=secret)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["clean"] is True and report["findings"] == [] and "HF_TOKEN" in report["secrets"]


def test_an_encoded_secret_is_found_too(work, secret):
    import base64

    (work / "encoded.log").write_text(f"auth: {base64.b64encode(secret.encode()).decode()}\n")
    result = audit(work, "encoded.log", secret=secret)
    assert result.returncode == 4, result.stdout + result.stderr
    [finding] = json.loads(result.stdout)["findings"]
    assert finding["secret"] == "HF_TOKEN" and "encoded.log" in finding["location"]


def test_without_targets_the_runners_own_state_is_audited(work, secret, cli):
    leak = work / ".cache" / "primus-runner" / "job-cache" / "left.txt"
    leak.parent.mkdir(parents=True)
    leak.write_text(secret)
    rc, out, err = cli("--json", "audit", cwd=work, env={"HF_TOKEN": secret, "DOCKER_HOST": NO_DOCKER,
                                                         "CONTAINER_HOST": "unix:///nonexistent/podman.sock"})
    assert rc == 4, err
    report = json.loads(out)
    assert [f["secret"] for f in report["findings"]] == ["HF_TOKEN"] and "containers not audited" in err
    assert_no_leak(out + err, [secret], "audit output")
