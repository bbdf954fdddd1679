"""Where the engine is (runner.clients.engine_api.discovery): DOCKER_HOST, the Docker context, the
Docker socket, Podman's rootful and rootless sockets, and the one "not reachable" message.

Sockets are real listening unix sockets in a temporary directory; the module's well-known
paths are pointed at them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
from pathlib import Path

import pytest

from loopback_servers import silent_unix_listener
from runner.clients.engine_api import discovery
from runner.clients.engine_api.discovery import EngineLocation, discover, unreachable
from runner.errors import ConfigError, EngineUnavailable


@pytest.fixture
def sockets(tmp_path, monkeypatch):
    """Well-known socket paths moved under tmp_path; ``listen(path)`` makes one answer."""
    docker = tmp_path / "docker.sock"
    rootful = tmp_path / "podman-root" / "podman.sock"
    monkeypatch.setattr(discovery, "DOCKER_SOCKET", str(docker))
    monkeypatch.setattr(discovery, "PODMAN_ROOTFUL_SOCKET", str(rootful))
    opened = contextlib.ExitStack()

    def listen(path: Path) -> Path:
        return opened.enter_context(silent_unix_listener(path))

    def stale(path: Path) -> Path:
        """A socket file nobody listens on (a daemon that died)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(path))
        s.close()
        return path

    class Sockets:
        pass

    ns = Sockets()
    ns.docker, ns.rootful, ns.listen, ns.stale = docker, rootful, listen, stale
    ns.runtime = tmp_path / "xdg"
    ns.rootless = ns.runtime / "podman" / "podman.sock"
    ns.env = {"HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(ns.runtime)}
    with opened:
        yield ns


def _context(config_dir: Path, name: str, host: str, tls: bool = False, skip_verify: bool = False) -> None:
    digest = hashlib.sha256(name.encode()).hexdigest()
    meta = config_dir / "contexts" / "meta" / digest
    meta.mkdir(parents=True)
    endpoint = {"Host": host, "SkipTLSVerify": skip_verify}
    (meta / "meta.json").write_text(json.dumps({"Name": name, "Metadata": {}, "Endpoints": {"docker": endpoint}}))
    if tls:
        tls_dir = config_dir / "contexts" / "tls" / digest / "docker"
        tls_dir.mkdir(parents=True)
        for f in ("ca.pem", "cert.pem", "key.pem"):
            (tls_dir / f).write_text("x")


# ------------------------------------------------------------------ DOCKER_HOST


def test_docker_host_is_taken_as_given_without_probing(sockets):
    loc = discover("auto", {**sockets.env, "DOCKER_HOST": "unix:///nowhere/docker.sock"})
    assert (loc.kind, loc.url, loc.source) == ("docker", "unix:///nowhere/docker.sock", "DOCKER_HOST")
    assert loc.tls is False


def test_docker_host_naming_a_podman_socket_is_podman(sockets):
    loc = discover("auto", {**sockets.env, "DOCKER_HOST": "unix:///run/user/1000/podman/podman.sock"})
    assert loc.kind == "podman"


def test_tcp_docker_host_with_tls_verify_and_cert_path(sockets, tmp_path):
    env = {**sockets.env, "DOCKER_HOST": "tcp://10.0.0.5:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(tmp_path / "certs")}
    loc = discover("auto", env)
    assert (loc.url, loc.tls, loc.tls_verify, loc.cert_path) == ("tcp://10.0.0.5:2376", True, True, str(tmp_path / "certs"))


def test_tcp_docker_host_tls_defaults_to_the_docker_config_dir(sockets, tmp_path):
    env = {**sockets.env, "DOCKER_HOST": "tcp://h:2376", "DOCKER_TLS": "1", "DOCKER_CONFIG": str(tmp_path / "cfg")}
    loc = discover("auto", env)
    assert (loc.tls, loc.tls_verify, loc.cert_path) == (True, False, str(tmp_path / "cfg"))


def test_plain_tcp_docker_host_has_no_tls(sockets):
    loc = discover("auto", {**sockets.env, "DOCKER_HOST": "tcp://127.0.0.1:2375"})
    assert loc.tls is False and loc.cert_path is None


# ------------------------------------------------------------------ Docker context


def test_current_context_from_config_json(sockets, tmp_path):
    cfg = tmp_path / "dockercfg"
    cfg.mkdir()
    (cfg / "config.json").write_text(json.dumps({"auths": {}, "currentContext": "remote"}))
    _context(cfg, "remote", "tcp://build-box:2376", tls=True)
    sockets.listen(sockets.docker)  # a live local socket does not beat the user's chosen context
    loc = discover("auto", {**sockets.env, "DOCKER_CONFIG": str(cfg)})
    assert (loc.url, loc.source, loc.tls, loc.tls_verify) == ("tcp://build-box:2376", "docker context remote", True, True)
    assert loc.cert_path.endswith("/docker") and Path(loc.cert_path, "ca.pem").exists()


def test_docker_context_env_beats_config_json_and_skip_verify_is_honoured(sockets, tmp_path):
    cfg = tmp_path / "dockercfg"
    cfg.mkdir()
    (cfg / "config.json").write_text(json.dumps({"currentContext": "remote"}))
    _context(cfg, "remote", "tcp://build-box:2376")
    _context(cfg, "lab", "tcp://lab:2376", tls=True, skip_verify=True)
    loc = discover("auto", {**sockets.env, "DOCKER_CONFIG": str(cfg), "DOCKER_CONTEXT": "lab"})
    assert (loc.url, loc.tls, loc.tls_verify) == ("tcp://lab:2376", True, False)


def test_context_pointing_at_podman_is_podman(sockets, tmp_path):
    cfg = tmp_path / "dockercfg"
    cfg.mkdir()
    _context(cfg, "podman", "unix:///run/user/1000/podman/podman.sock")
    loc = discover("auto", {**sockets.env, "DOCKER_CONFIG": str(cfg), "DOCKER_CONTEXT": "podman"})
    assert (loc.kind, loc.source) == ("podman", "docker context podman")


def test_docker_host_beats_the_context(sockets, tmp_path):
    cfg = tmp_path / "dockercfg"
    cfg.mkdir()
    _context(cfg, "remote", "tcp://build-box:2376")
    loc = discover("auto", {**sockets.env, "DOCKER_CONFIG": str(cfg), "DOCKER_CONTEXT": "remote", "DOCKER_HOST": "unix:///x.sock"})
    assert loc.source == "DOCKER_HOST"


def test_default_context_falls_through_to_the_sockets(sockets, tmp_path):
    cfg = tmp_path / "dockercfg"
    cfg.mkdir()
    (cfg / "config.json").write_text(json.dumps({"currentContext": "default"}))
    sockets.listen(sockets.docker)
    loc = discover("auto", {**sockets.env, "DOCKER_CONFIG": str(cfg)})
    assert (loc.kind, loc.source) == ("docker", "default Docker socket")


def test_a_context_that_does_not_exist_is_exit_1_with_the_fix(sockets, tmp_path):
    cfg = tmp_path / "dockercfg"
    cfg.mkdir()
    with pytest.raises(EngineUnavailable) as info:
        discover("auto", {**sockets.env, "DOCKER_CONFIG": str(cfg), "DOCKER_CONTEXT": "gone"})
    assert info.value.exit_code == 1
    assert "'gone'" in info.value.message and "DOCKER_CONTEXT" in info.value.message
    assert "docker context use default" in info.value.hint


def test_unreadable_config_json_is_ignored(sockets, tmp_path):
    cfg = tmp_path / "dockercfg"
    cfg.mkdir()
    (cfg / "config.json").write_text("{not json")
    sockets.listen(sockets.docker)
    assert discover("auto", {**sockets.env, "DOCKER_CONFIG": str(cfg)}).source == "default Docker socket"


# ------------------------------------------------------------------ well-known sockets


def test_live_docker_socket_first(sockets):
    sockets.listen(sockets.docker)
    sockets.listen(sockets.rootful)
    loc = discover("auto", sockets.env)
    assert (loc.kind, loc.url) == ("docker", f"unix://{sockets.docker}")


def test_stale_docker_socket_does_not_hide_a_live_rootful_podman(sockets):
    sockets.stale(sockets.docker)
    sockets.listen(sockets.rootful)
    loc = discover("auto", sockets.env)
    assert (loc.kind, loc.url, loc.source) == ("podman", f"unix://{sockets.rootful}", "rootful Podman socket")
    assert loc.tried[0].startswith(f"{sockets.docker} (") and "absent" not in loc.tried[0]


def test_rootless_podman_under_xdg_runtime_dir(sockets):
    sockets.listen(sockets.rootless)
    loc = discover("auto", sockets.env)
    assert (loc.kind, loc.url, loc.source) == ("podman", f"unix://{sockets.rootless}", "rootless Podman socket")
    assert [t.split(" ")[1] for t in loc.tried] == ["(absent)", "(absent)", "(ok)"]


def test_preference_docker_never_picks_podman(sockets):
    sockets.listen(sockets.rootful)
    loc = discover("docker", sockets.env)
    assert (loc.kind, loc.url) == ("docker", f"unix://{sockets.docker}")
    assert len(loc.tried) == 1


def test_preference_podman_skips_docker_and_a_docker_host_naming_docker(sockets):
    sockets.listen(sockets.docker)
    sockets.listen(sockets.rootful)
    loc = discover("podman", {**sockets.env, "DOCKER_HOST": f"unix://{sockets.docker}"})
    assert (loc.kind, loc.url) == ("podman", f"unix://{sockets.rootful}")


def test_preference_podman_takes_container_host(sockets):
    loc = discover("podman", {**sockets.env, "CONTAINER_HOST": "unix:///run/user/7/podman/podman.sock"})
    assert (loc.kind, loc.source) == ("podman", "CONTAINER_HOST")


def test_unknown_preference_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        discover("containerd", {})
    assert info.value.exit_code == 2 and "auto, docker, podman" in str(info.value.problems[0])


def test_nothing_answers_names_docker_and_every_place_looked_at(sockets):
    loc = discover("auto", sockets.env)
    assert (loc.kind, loc.url) == ("docker", f"unix://{sockets.docker}")
    err = unreachable(loc, FileNotFoundError(2, "No such file or directory"))
    assert err.exit_code == 1
    assert err.message.startswith(f"Docker daemon is not reachable at unix://{sockets.docker} (default Docker socket; FileNotFoundError")
    assert f"also looked at: {sockets.rootful} (absent), {sockets.rootless} (absent)" in err.message
    assert "dockerd" in err.hint and "podman system service" in err.hint


def test_nothing_answers_prefers_the_socket_that_exists_for_the_message(sockets):
    sockets.stale(sockets.rootful)
    loc = discover("auto", sockets.env)
    assert (loc.kind, loc.url) == ("podman", f"unix://{sockets.rootful}")
    err = unreachable(loc, ConnectionRefusedError(111, "Connection refused"))
    assert err.message.startswith("Podman is not reachable at")
    assert "podman.socket" in err.hint


def test_unreachable_rootless_podman_says_how_to_start_the_user_service(sockets):
    loc = EngineLocation("podman", f"unix://{sockets.rootless}", "rootless Podman socket")
    assert "systemctl --user start podman.socket" in unreachable(loc).hint


def test_unreachable_docker_host_says_where_it_points():
    loc = EngineLocation("docker", "unix:///nonexistent.sock", "DOCKER_HOST")
    err = unreachable(loc, FileNotFoundError(2, "No such file or directory"))
    assert "not reachable at unix:///nonexistent.sock (DOCKER_HOST;" in err.message
    assert "DOCKER_HOST points at unix:///nonexistent.sock" in err.hint and "dockerd" in err.hint


# Which engine a dry run names without asking it: the kind of the unix socket that answers,
# judged by where the socket really is (Podman's docker.sock is a link to its own socket).
def test_a_link_to_podmans_socket_is_podman_and_a_dead_socket_is_not_known(tmp_path):
    (tmp_path / "podman").mkdir()
    real = tmp_path / "podman" / "podman.sock"
    with silent_unix_listener(real):
        link = tmp_path / "docker.sock"
        link.symlink_to(real)
        located = discovery.discover("auto", env={"DOCKER_HOST": f"unix://{link}"})
        assert located.kind == "docker"  # what the path alone suggests
        assert discovery.answering_kind(located) == "podman"
        with silent_unix_listener(tmp_path / "plain.sock") as plain:
            assert discovery.answering_kind(discovery.discover("auto", env={"DOCKER_HOST": f"unix://{plain}"})) == "docker"
    assert discovery.answering_kind(discovery.discover("auto", env={"DOCKER_HOST": f"unix://{real}"})) is None
    assert discovery.answering_kind(discovery.discover("auto", env={"DOCKER_HOST": "tcp://127.0.0.1:1"})) is None
