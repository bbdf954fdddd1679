"""What `build` shows: the Dockerfile's own output as it comes (no --verbose needed), only the user's
steps (not the runner's labels), and only the build args the user or the Dockerfile names."""

from __future__ import annotations

import json
import subprocess

import pytest

from docker_helpers import CONFIG, Workspace, unique

pytestmark = pytest.mark.docker


def _workspace(tmp_path, canary, dockerfile: str, tag: str) -> Workspace:
    ws = Workspace(tmp_path, canary, CONFIG + f"images:\n  file: Dockerfile\n  rocm:\n    tag: {tag}\n")
    (ws.cwd / "Dockerfile").write_text(dockerfile)
    return ws


@pytest.mark.parametrize("mount", ["", "--mount=type=cache,target=/c "], ids=["classic", "buildkit"])
def test_build_streams_the_steps_output_and_shows_only_the_users_steps(tmp_path, canary, busybox_image, mount):
    tag = f"primus-test/build-output:{unique('t')}"
    ws = _workspace(tmp_path, canary, f"FROM {busybox_image}\nRUN {mount}echo said-by-the-run-step\n", tag)
    try:
        built = ws.run("build", "--no-cache", "--tag", tag, timeout=300)
        err = built.stderr.decode()
        assert built.returncode == 0, err
        assert "    said-by-the-run-step" in err.splitlines(), err
        steps = [line for line in err.splitlines() if line.startswith("[")]
        assert steps and all(line.startswith(("[1/2]", "[2/2]")) for line in steps), steps
        assert "LABEL" not in err and "2 steps" in err, err
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def test_build_passes_only_the_build_args_someone_names(tmp_path, canary, busybox_image):
    """The host's pip index reaches a Dockerfile that declares it, never one that does not (no unused-arg warning)."""
    tag = f"primus-test/build-args:{unique('t')}"
    host = {"PIP_INDEX_URL": "https://pypi.example/simple"}
    plain = _workspace(tmp_path / "plain", canary, f"FROM {busybox_image}\nRUN true\n", tag)
    doc = json.loads(plain.run("--json", "build", "--dry-run", "--tag", tag, env=host).stdout)
    assert "PIP_INDEX_URL" not in dict(doc["build_args"]), doc["build_args"]
    declares = _workspace(tmp_path / "declares", canary, f"FROM {busybox_image}\nARG PIP_INDEX_URL\nRUN true\n", tag)
    doc = json.loads(declares.run("--json", "build", "--dry-run", "--tag", tag, env=host).stdout)
    assert dict(doc["build_args"])["PIP_INDEX_URL"] == "https://pypi.example/simple", doc["build_args"]
    try:
        built = plain.run("build", "--tag", tag, env=host, timeout=300)
        assert built.returncode == 0, built.stderr.decode()
        assert "not consumed" not in built.stderr.decode() and "PIP_INDEX_URL" not in built.stderr.decode()
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
