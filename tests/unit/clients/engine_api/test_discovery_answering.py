"""Which engine a dry run names without asking it: the kind of the unix socket that answers,
judged by where the socket really is (Podman's docker.sock is a link to its own socket)."""

from __future__ import annotations

from loopback_servers import silent_unix_listener
from runner.clients.engine_api import discovery


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
