"""Pulls from the real password-protected registry (``.ci/setup-registry.sh``) through the real Docker daemon
and, for the credential sources, through rootful Podman's Docker-compatible API.

One pull per credential source (Docker config ``auths``, a credential helper
through ``credHelpers``, the launcher's ``DOCKER_LOGIN_*``), the failures by
cause (refused → exit 2, unreachable → 1, not found → 2), the three policies,
and the password in no output, file, command line or ``docker inspect``.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

from engine_fixtures import assert_no_leak, free_port
from registry_helpers import (HELPER_NAME, CmdlineWatch, auths_entry, docker_inspect, files_containing,  # noqa: F401
                              test_registry, write_credential_helper, write_docker_config)
from runner.clients.engine_api import Engine
from runner.clients.engine_api.pull import image_present, pull
from runner.errors import ConfigError, EngineUnavailable, UsageError
from runner.ui.pull_progress import PlainPullProgress, RichPullProgress
from runner.clients.registry import RegistryCredential, credentials_for
from runner.secrets import Secret, secret_scope

pytestmark = [pytest.mark.docker, pytest.mark.engines("docker")]


BOTH = pytest.mark.engines("docker", "podman")  # the others: Docker only (module mark)


@pytest.fixture
def engine(engine_host):
    """The Engine API client for the engine under test (Docker unless parametrised with BOTH)."""
    e = Engine(engine_host.host)
    yield e
    e.reset()


def _remove(engine, image: str) -> None:
    from runner.clients.engine_api import ApiError

    try:
        engine.request("DELETE", f"/images/{quote(image, safe='')}", {"force": 1})
    except ApiError:
        pass


def _engine_knows_registry(engine, exc: EngineUnavailable) -> None:
    """Podman's API service reads registries.conf when it starts: one started before .ci/setup-registry.sh
    marked the registry insecure refuses its plain HTTP. That is set-up order, not the runner."""
    if "speaks plain HTTP" in exc.message:
        from engine_fixtures import engine_missing

        engine_missing(f"{engine.host} configured for the test registry", f"{exc.message}; restart the Podman service")


@pytest.fixture
def user_home(tmp_path, monkeypatch):
    """A user's HOME and working directory: the leak scan looks at every file under them."""
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("DOCKER_CONFIG", raising=False)
    monkeypatch.chdir(cwd)
    return home


@pytest.fixture
def fresh(engine, test_registry):
    """The registry's busybox image, not present in the engine (removed before and after the test)."""
    _remove(engine, test_registry.busybox)
    yield test_registry.busybox
    _remove(engine, test_registry.busybox)


def _pull_and_check(engine, image, cred, reg, home, extra_allowed=frozenset()):
    """Pull with the credential while watching every command line; then no leak anywhere."""
    lines: list[str] = []
    scope = secret_scope(extra=[(f"registry password {reg.addr}", cred.password)])
    with CmdlineWatch([reg.password]) as watch:
        try:
            pulled = pull(engine, image, policy="always", credential=cred, progress=PlainPullProgress(scope.masker, lines.append))
        except EngineUnavailable as exc:
            _engine_knows_registry(engine, exc)
            raise
        assert pulled is True
    assert watch.scans > 0
    assert not watch.hits, f"the password was on a command line during the pull: {watch.hits}"
    assert image_present(engine, image)
    output = "\n".join(lines)
    assert f"pulling {image}" in output and f"pulled {image}" in output
    assert_no_leak(output, [reg.password], "the pull's progress output")
    inspect = json.dumps(engine.request("GET", f"/images/{quote(image, safe='')}/json"))
    history = json.dumps(engine.request("GET", f"/images/{quote(image, safe='')}/history"))
    assert reg.addr in inspect
    assert_no_leak(inspect + history, [reg.password], "the engine's inspect and history of the pulled image")
    assert_no_leak(docker_inspect(image), [reg.password], "docker inspect of the pulled image")  # DOCKER_HOST: this engine
    leaked = files_containing(home, [reg.password], skip=set(extra_allowed)) + files_containing(Path.cwd(), [reg.password])
    assert not leaked, f"the password is in files: {leaked}"


# ------------------------------------------------------------------ one pull per credential source

@BOTH
def test_pull_with_docker_config_auths(engine, test_registry, fresh, user_home):
    config = write_docker_config(user_home / ".docker", auths_entry(test_registry))
    cred = credentials_for(fresh, lambda name: os.environ.get(name))
    assert cred is not None and cred.source == f"docker config {config}"
    _pull_and_check(engine, fresh, cred, test_registry, user_home, extra_allowed={config})


@BOTH
def test_pull_with_credential_helper(engine, test_registry, fresh, user_home, tmp_path, monkeypatch):
    write_credential_helper(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    write_docker_config(user_home / ".docker", {"credHelpers": {test_registry.addr: HELPER_NAME}})
    cred = credentials_for(fresh, lambda name: os.environ.get(name))
    assert cred is not None and cred.source == f"credential helper docker-credential-{HELPER_NAME}"
    _pull_and_check(engine, fresh, cred, test_registry, user_home)


@BOTH
def test_pull_with_docker_login_env(engine, test_registry, fresh, user_home):
    env = {"DOCKER_LOGIN_USER": test_registry.user, "DOCKER_LOGIN_KEY": test_registry.password,
           "DOCKER_LOGIN_REGISTRY": test_registry.addr}
    cred = credentials_for(fresh, env.get)
    assert cred is not None and cred.source == "env DOCKER_LOGIN_*"
    _pull_and_check(engine, fresh, cred, test_registry, user_home)


def test_pull_multi_layer_image_with_rich_progress(engine, test_registry, user_home):
    """The 220 MB three-layer image: per-layer bytes reach the renderer, the password reaches no output."""
    import io

    from rich.console import Console

    _remove(engine, test_registry.big)
    try:
        cred = RegistryCredential(test_registry.addr, test_registry.user, Secret(test_registry.password), "test")
        scope = secret_scope(extra=[("registry password", cred.password)])
        buffer = io.StringIO()
        seen: list[tuple] = []

        class Recording(RichPullProgress):
            def layer(self, layer_id, status, current, total):
                seen.append((layer_id, status, current, total))
                super().layer(layer_id, status, current, total)

        console = Console(file=buffer, force_terminal=True, width=120)
        assert pull(engine, test_registry.big, policy="missing", credential=cred, progress=Recording(scope.masker, console)) is True
        downloads = {layer: total for layer, status, _, total in seen if status == "Downloading" and total}
        assert len(downloads) >= 2 and sum(downloads.values()) >= 200_000_000
        assert {status for _, status, _, _ in seen} >= {"Downloading", "Pull complete"}
        assert_no_leak(buffer.getvalue(), [test_registry.password], "the rich progress output")
        # missing + present: no pull at all
        assert pull(engine, test_registry.big, policy="missing", credential=cred) is False
    finally:
        _remove(engine, test_registry.big)


# ------------------------------------------------------------------ failures by cause

@BOTH
def test_wrong_password_exits_2_naming_registry_and_source(engine, test_registry, fresh, user_home):
    wrong = f"canary-wrong-{uuid.uuid4().hex}"
    env = {"DOCKER_LOGIN_USER": test_registry.user, "DOCKER_LOGIN_KEY": wrong, "DOCKER_LOGIN_REGISTRY": test_registry.addr}
    cred = credentials_for(fresh, env.get)
    lines: list[str] = []
    with pytest.raises(ConfigError) as info:
        try:
            pull(engine, fresh, policy="missing", credential=cred, progress=PlainPullProgress(None, lines.append))
        except EngineUnavailable as exc:
            _engine_knows_registry(engine, exc)
            raise
    text = f"{info.value}\n{info.value.hint}\n" + "\n".join(lines)
    assert info.value.exit_code == 2
    assert test_registry.addr in str(info.value) and "env DOCKER_LOGIN_*" in str(info.value)
    assert_no_leak(text, [wrong, test_registry.password], "the refusal and the progress output")
    assert not image_present(engine, fresh)


def test_no_credential_for_a_protected_registry_exits_2(engine, fresh):
    with pytest.raises(ConfigError) as info:
        pull(engine, fresh, policy="always")
    assert info.value.exit_code == 2 and "docker login" in str(info.value)


def test_registry_down_exits_1(engine, test_registry):
    addr = f"127.0.0.1:{free_port()}"  # nothing listens there
    cred = RegistryCredential(addr, test_registry.user, Secret(test_registry.password), "test")
    with pytest.raises(EngineUnavailable) as info:
        pull(engine, f"{addr}/primus-test/busybox:latest", policy="missing", credential=cred)
    assert info.value.exit_code == 1 and addr in str(info.value)
    assert_no_leak(f"{info.value} {info.value.hint}", [test_registry.password], "the error")


@pytest.mark.parametrize("ref", ["primus-test/no-such-image:latest", "primus-test/busybox:no-such-tag"])
def test_not_found_exits_2_naming_the_image(engine, test_registry, ref):
    cred = RegistryCredential(test_registry.addr, test_registry.user, Secret(test_registry.password), "test")
    image = f"{test_registry.addr}/{ref}"
    with pytest.raises(ConfigError) as info:
        pull(engine, image, policy="missing", credential=cred)
    assert info.value.exit_code == 2 and image in str(info.value) and "tag" in str(info.value)


def test_invalid_reference_is_a_usage_error(engine, test_registry):
    with pytest.raises(UsageError):
        pull(engine, f"{test_registry.addr}/Primus-Test/UPPER:latest", policy="always")


# ------------------------------------------------------------------ policies

def test_policy_never(engine, test_registry, fresh, busybox_image):
    with pytest.raises(ConfigError) as info:
        pull(engine, fresh, policy="never")
    assert info.value.exit_code == 2 and fresh in str(info.value) and "--pull missing" in str(info.value)
    assert pull(engine, busybox_image, policy="never") is False


@BOTH
def test_policy_missing_pulls_once_then_not_at_all(engine, test_registry, fresh):
    good = RegistryCredential(test_registry.addr, test_registry.user, Secret(test_registry.password), "test")
    try:
        assert pull(engine, fresh, policy="missing", credential=good) is True
    except EngineUnavailable as exc:
        _engine_knows_registry(engine, exc)
        raise
    # present: the registry is not asked (a wrong credential would be refused there)
    wrong = RegistryCredential(test_registry.addr, test_registry.user, Secret("wrong-" + uuid.uuid4().hex), "test")
    assert pull(engine, fresh, policy="missing", credential=wrong) is False


def test_policy_always_asks_the_registry_even_when_present(engine, test_registry, fresh):
    good = RegistryCredential(test_registry.addr, test_registry.user, Secret(test_registry.password), "test")
    assert pull(engine, fresh, policy="missing", credential=good) is True
    assert pull(engine, fresh, policy="always", credential=good) is True
    wrong = RegistryCredential(test_registry.addr, test_registry.user, Secret("wrong-" + uuid.uuid4().hex), "test")
    with pytest.raises(ConfigError):
        pull(engine, fresh, policy="always", credential=wrong)


def test_unknown_policy_is_a_usage_error(engine, busybox_image):
    with pytest.raises(UsageError):
        pull(engine, busybox_image, policy="sometimes")


# ------------------------------------------------------------------ pull_as_needed: what up/submit/build/node-agent call

def test_pull_as_needed_looks_up_no_credential_when_the_image_is_local(engine, busybox_image, tmp_path):
    from runner.clients.engine_api.pull import pull_as_needed

    # A credential lookup would fail here (the helper does not exist): it must not happen.
    write_docker_config(tmp_path / "dc", {"credsStore": "nosuchhelper-primus"})
    lookup = {"DOCKER_CONFIG": str(tmp_path / "dc")}.get
    assert pull_as_needed(engine, busybox_image, policy="missing", lookup=lookup) is False
    assert pull_as_needed(engine, busybox_image, policy="never", lookup=lookup) is False
    with pytest.raises(EngineUnavailable):
        pull_as_needed(engine, busybox_image, policy="always", lookup=lookup)
    with pytest.raises(ConfigError):  # the caller knows it is absent (create said 404): no inspect, no lookup
        pull_as_needed(engine, busybox_image, policy="never", lookup=lookup, present=False)


def test_pull_as_needed_plain_progress_masked_no_credential_in_env(engine, test_registry, fresh, user_home, capsys):
    """The Docker-config password is not in the environment, so the command's scope does not know it:
    the progress display masks it all the same."""
    from runner.clients.engine_api.pull import pull_as_needed
    from runner.ui import Output

    write_docker_config(user_home / ".docker", auths_entry(test_registry))
    out = Output(color=False, masker=secret_scope().masker)
    assert pull_as_needed(engine, fresh, policy="missing", lookup=os.environ.get, out=out) is True
    err = capsys.readouterr().err
    assert f"pulling {fresh}" in err and f"pulled {fresh}" in err
    assert_no_leak(err, [test_registry.password], "pull_as_needed's output")
    assert pull_as_needed(engine, fresh, policy="missing", lookup=os.environ.get, out=out) is False
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------ Slurm: each node pulls before its job, as the node agent will

_NODE_PULL = """
import os, sys
from runner.clients.engine_api import Engine
from runner.clients.engine_api.pull import pull_as_needed
from runner.secrets import secret_scope
from runner.ui import Output

scope = secret_scope([os.environ], lambda name: name == "DOCKER_LOGIN_KEY")
out = Output(color=False, masker=scope.masker)
pulled = pull_as_needed(Engine(), sys.argv[1], policy="missing", lookup=os.environ.get, out=out)
print(f"node {os.environ['SLURM_NODEID']}: ready (pulled={pulled})", flush=True)
"""


def test_both_slurm_nodes_pull_with_the_forwarded_docker_login(slurm_cluster, engine, test_registry, fresh, tmp_path, monkeypatch):
    """DOCKER_LOGIN_* reach the nodes by name only (--export), each node pulls through its engine."""
    import sys

    from engine_fixtures import srun

    script = tmp_path / "node_pull.py"
    script.write_text(_NODE_PULL)
    monkeypatch.setenv("DOCKER_LOGIN_USER", test_registry.user)
    monkeypatch.setenv("DOCKER_LOGIN_KEY", test_registry.password)
    monkeypatch.setenv("DOCKER_LOGIN_REGISTRY", test_registry.addr)
    export = "--export=PATH,HOME,DOCKER_LOGIN_USER,DOCKER_LOGIN_KEY,DOCKER_LOGIN_REGISTRY"
    with CmdlineWatch([test_registry.password]) as watch:
        done = srun(slurm_cluster, [export, sys.executable, str(script), fresh])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "node 0: ready" in done.stdout and "node 1: ready" in done.stdout
    assert f"pulling {fresh}" in done.stderr
    assert not watch.hits, f"the password was on a command line: {watch.hits}"
    assert_no_leak(done.stdout + done.stderr, [test_registry.password], "the nodes' output")
    assert image_present(engine, fresh)
