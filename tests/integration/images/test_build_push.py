"""`build --push` to the password-protected registry with the credentials a pull uses
(DOCKER_LOGIN_*, never on a command line or in the output); a missing credential is refused."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import uuid

import pytest

from registry_helpers import _v2, test_registry  # noqa: F401 - the session fixture

pytestmark = pytest.mark.docker


def build(cwd, tag, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_LOGIN")}
    full.update(HOME=str(cwd), XDG_CACHE_HOME=str(cwd / ".cache"), NO_COLOR="1", DOCKER_CONFIG=str(cwd / "no-docker-config"), **env)
    return subprocess.run([sys.executable, "-P", "-m", "runner", "build", "--file", "Dockerfile", "--context", ".", "--tag", tag,
                           "--push", "--pull", "never"], cwd=cwd, env=full, capture_output=True, text=True, timeout=300)


def test_build_push_uses_the_pull_credentials(docker_client, busybox_image, test_registry, tmp_path):  # noqa: F811
    reg = test_registry
    (tmp_path / "Dockerfile").write_text(f"FROM {busybox_image}\nRUN echo ux-push > /ux-push\n")
    repo = f"primus-test/ux-push-{uuid.uuid4().hex[:8]}"
    tag = f"{reg.addr}/{repo}:latest"
    try:
        refused = build(tmp_path, tag)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
        assert "not valid" not in refused.stderr, "a missing credential is not a bad image name"
        pushed = build(tmp_path, tag, DOCKER_LOGIN_USER=reg.user, DOCKER_LOGIN_KEY=reg.password, DOCKER_LOGIN_REGISTRY=reg.addr)
        assert pushed.returncode == 0, pushed.stderr
        assert f"pushed {tag}" in pushed.stderr and reg.password not in pushed.stdout + pushed.stderr
        auth = base64.b64encode(f"{reg.user}:{reg.password}".encode()).decode()
        assert _v2(reg.addr, auth, f"/v2/{repo}/manifests/latest") == 200, "the registry holds the pushed image"
    finally:
        try:
            docker_client.images.remove(tag, force=True)
        except Exception:  # noqa: BLE001
            pass
