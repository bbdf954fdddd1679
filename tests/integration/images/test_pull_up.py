"""`up` of an image that exists only in the password-protected local registry
(``.ci/setup-registry.sh``), on Docker and on Podman: the engine pulls it with the
launcher's DOCKER_LOGIN_* credential, the job runs, and the password is in no output,
file, command line or `docker inspect` (of the container or the pulled image)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from engine_fixtures import assert_no_leak
from registry_helpers import CmdlineWatch, docker_inspect, files_containing, test_registry  # noqa: F401

pytestmark = [pytest.mark.docker]


def _remove(image: str) -> None:
    """Our own tag of the image, on whichever engine DOCKER_HOST names (docker CLI speaks both)."""
    subprocess.run(["docker", "image", "rm", "-f", image], capture_output=True, timeout=60)


def test_up_pulls_the_private_image_with_docker_login_env(tmp_path, engine_host, test_registry):
    image = test_registry.busybox
    _remove(image)  # only the registry has it
    (tmp_path / ".primus.yaml").write_text(
        f"container:\n  gpu: none\n  options:\n    image: {image}\n    group-add: []\n    privileged: false\n    ulimit: []\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_LOGIN_")}
    env.update(engine_host.env, HOME=str(tmp_path), NO_COLOR="1", DOCKER_LOGIN_USER=test_registry.user,
               DOCKER_LOGIN_KEY=test_registry.password, DOCKER_LOGIN_REGISTRY=test_registry.addr)
    name = f"pull-up-{uuid.uuid4().hex[:8]}"
    secret = [test_registry.password]
    try:
        with CmdlineWatch(secret) as watch:
            result = subprocess.run([sys.executable, "-m", "runner", "up", "--keep", "--name", name, "--",
                                     "sh", "-c", 'echo "ran key=${DOCKER_LOGIN_KEY:-unset}"'],
                                    cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "ran key=unset" in result.stdout, "the registry login is the engine's, never the job's"
        assert f"pulling {image}" in result.stderr
        assert watch.scans > 0 and not watch.hits, f"the password was on a command line: {watch.hits}"
        assert_no_leak(result.stdout + result.stderr, secret, "up's output")
        inspect = subprocess.run(["docker", "inspect", name], capture_output=True, text=True, timeout=60, check=True).stdout
        assert_no_leak(inspect, secret, "docker inspect of the job container")
        assert_no_leak(docker_inspect(image), secret, "docker image inspect")
        assert files_containing(tmp_path, secret) == [], "files under the project"
        assert json.loads(inspect)[0]["Config"]["Image"].endswith(image.split("/", 1)[1])
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
        _remove(image)
