"""Which engine a dry run names without asking it: the kind of the unix socket that answers,
judged by where the socket really is (Podman's docker.sock is a link to its own socket)."""

from __future__ import annotations

import socket

from runner.clients.engine_api import discovery


def _listening(path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(1)
    return sock


def test_a_link_to_podmans_socket_is_podman_and_a_dead_socket_is_not_known(tmp_path):
    (tmp_path / "podman").mkdir()
    real = tmp_path / "podman" / "podman.sock"
    server = _listening(real)
    try:
        link = tmp_path / "docker.sock"
        link.symlink_to(real)
        located = discovery.discover("auto", env={"DOCKER_HOST": f"unix://{link}"})
        assert located.kind == "docker"  # what the path alone suggests
        assert discovery.answering_kind(located) == "podman"
        plain = tmp_path / "plain.sock"
        other = _listening(plain)
        try:
            assert discovery.answering_kind(discovery.discover("auto", env={"DOCKER_HOST": f"unix://{plain}"})) == "docker"
        finally:
            other.close()
    finally:
        server.close()
    assert discovery.answering_kind(discovery.discover("auto", env={"DOCKER_HOST": f"unix://{real}"})) is None
    assert discovery.answering_kind(discovery.discover("auto", env={"DOCKER_HOST": "tcp://127.0.0.1:1"})) is None
