"""The README's first command: `primus-runner demo` works on this machine and masks its secret."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.docker


def test_demo_runs_and_masks_the_secret(docker_client, tmp_path):
    canary = "canary-demo-5c1e9a0b7d2f"
    env = dict(os.environ, DEMO_API_KEY=canary, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"), NO_COLOR="1")
    result = subprocess.run([sys.executable, "-m", "runner", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "greeting (a literal from the config): hello from primus-runner" in out
    assert "WANDB_PROJECT=primus-demo" in out and "WANDB_MODE=offline" in out
    assert "the secret, as the job sees it: ***" in out
    assert "DEMO_NOT_SET: absent" in out
    assert canary not in out + result.stderr
    import base64

    assert base64.b64encode(canary.encode()).decode()[:16] not in out + result.stderr
