"""`check` refuses what `up` would refuse, with the same message and exit code, and `up` refuses it
before anything exists: a device this host lacks, an image the pull policy will not fetch, an image
the registry will not serve (`--online`: the password registry of .ci/setup-registry.sh), the
process engine's working directory and program. Against Docker and Podman (the registry: Docker,
whose daemon can be asked without pulling)."""

from __future__ import annotations

import subprocess

import pytest

from docker_helpers import unique
from registry_helpers import test_registry  # noqa: F401  (a fixture)

pytestmark = pytest.mark.docker


def _said(result) -> list[str]:
    """The error lines and their fixes, as the user reads them."""
    text = result.stderr.decode() if isinstance(result.stderr, bytes) else result.stderr
    return [line for line in text.splitlines() if line.startswith(("error:", "  fix:"))]


def _same_refusal(ws, check_args: tuple, up_args: tuple, code: int, words: str, env: dict | None = None) -> None:
    name = unique("refused")
    checked = ws.run("check", *check_args, env=env)
    launched = ws.run("up", "--name", name, *up_args, "--", "true", env=env)
    assert checked.returncode == launched.returncode == code, (checked.stderr, launched.stderr)
    assert _said(checked) == _said(launched) and words in "\n".join(_said(launched)), (_said(checked), _said(launched))
    assert b"internal error" not in checked.stderr + launched.stderr
    left = subprocess.run([*ws.cli, "ps", "-aq", "--filter", f"name={name}"], capture_output=True, text=True).stdout
    assert left.split() == [], "up created a container for a launch it refused"


@pytest.fixture
def ws(ws, engine_host):
    ws.cli = engine_host.cli
    return ws


def test_a_missing_device(ws):
    device = f"/dev/primus-absent-{unique('dev')}"
    _same_refusal(ws, ("--device", device), ("--device", device), 2, f"device {device} (--device) does not exist on this host")


def test_an_image_the_pull_policy_will_not_fetch(ws):
    (ws.cwd / ".primus.yaml").write_text((ws.cwd / ".primus.yaml").read_text().replace("container:\n", "container:\n  pull: never\n", 1))
    image = f"primus-test/absent-{unique('img')}:latest"
    _same_refusal(ws, ("--image", image), ("--image", image), 2, f"image {image} is not present locally and the pull policy is 'never'")


@pytest.mark.engines("docker")
@pytest.mark.parametrize("case", ["wrong password", "no such image", "unreachable"])
def test_online_an_image_the_registry_will_not_serve(ws, test_registry, canary, case):  # noqa: F811
    wrong = canary["HF_TOKEN"]  # a unique wrong password: it must show up nowhere
    login = {"DOCKER_LOGIN_USER": test_registry.user, "DOCKER_LOGIN_REGISTRY": test_registry.addr,
             "DOCKER_LOGIN_KEY": wrong if case == "wrong password" else test_registry.password}
    image, code, words = {
        "wrong password": (f"{test_registry.addr}/primus-test/absent-{unique('img')}:latest", 2, f"registry {test_registry.addr} refused"),
        "no such image": (f"{test_registry.addr}/primus-test/absent-{unique('img')}:latest", 2, "was not found in registry"),
        "unreachable": (f"127.0.0.1:9/primus-test/busybox:{unique('tag')}", 1, "registry 127.0.0.1:9 is not reachable"),
    }[case]
    _same_refusal(ws, ("--online", "--image", image), ("--image", image), code, words, env=login)
    for result in (ws.run("check", "--online", "--image", image, env=login), ws.run("up", "--image", image, "--", "true", env=login)):
        assert wrong.encode() not in result.stdout + result.stderr
    if case == "no such image":  # the same login, an image the registry has: check passes
        served = ws.run("check", "--online", "--image", test_registry.busybox, env=login)
        assert served.returncode == 0 and test_registry.password.encode() not in served.stdout + served.stderr, served.stderr


@pytest.mark.engines("docker")
@pytest.mark.parametrize("args, words", [
    (("--workdir", "/nonexistent-primus-workdir"), "the working directory /nonexistent-primus-workdir (--workdir) does not exist"),
    (("--", "pyhton3-not-here"), "pyhton3-not-here is not installed on this host"),
], ids=["workdir", "program"])
def test_the_process_engine(ws, args, words):
    flags, _, command = " ".join(args).partition("-- ")
    checked = ws.run("check", "--engine", "direct", *flags.split(), *(("--", command) if command else ()))
    launched = ws.run("up", "--engine", "direct", *flags.split(), "--", command or "true")
    assert checked.returncode == launched.returncode == 2, (checked.stderr, launched.stderr)
    assert _said(checked) == _said(launched) and words in "\n".join(_said(launched)), (_said(checked), _said(launched))
    assert b"internal error" not in checked.stderr + launched.stderr
