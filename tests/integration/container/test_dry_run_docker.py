"""Dry runs change nothing on the container engine, whichever way they are asked for, and show
the engine's own request (the `docker run` / `podman run` equivalent), secrets by name only.

"Nothing changed" is read from the engine's own records: its event log (`docker events`,
filtered to the test's unique container name or image) and `ps -a`.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time

import pytest

from docker_helpers import CONFIG, Workspace, force_remove, unique
from engine_fixtures import assert_no_leak

SECTIONS = ("main", "container", "slurm", "direct")


def _events(since: float, **filters: str) -> list[dict]:
    """The engine's events since ``since`` and until at least one second from now: ``--until`` is in
    whole seconds, and the engine streams until then, so an event it writes a little late still counts."""
    args = ["docker", "events", "--since", f"{since:.0f}", "--until", str(math.ceil(time.time() + 1)), "--format", "{{json .}}"]
    for key, value in filters.items():
        args += ["--filter", f"{key}={value}"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _exists(name: str) -> bool:
    out = subprocess.run(["docker", "ps", "-a", "--filter", f"name=^{name}$", "--format", "{{.Names}}"], capture_output=True, text=True, check=True)
    return name in out.stdout.split()


def _with_section(section: str, key: str = "dry_run") -> str:
    if section == "container":
        return CONFIG.replace("container:\n", f"container:\n  {key}: true\n", 1)
    return CONFIG + f"{section}:\n  {key}: true\n"


def _runner_container(name: str, image: str) -> None:
    """A stopped container with the runner's labels, owned by this user (what `down` and `--clean` act on)."""
    subprocess.run(["docker", "create", "--name", name, "--label", "io.primus-runner.managed=true", "--label", f"io.primus-runner.job={name}",
                    "--label", f"io.primus-runner.owner={os.getuid()}", image, "true"], capture_output=True, check=True)


def _assert_untouched(since: float, name: str) -> None:
    assert _events(since, container=name) == [], "the engine recorded an event for the dry run's container"
    assert not _exists(name)


@pytest.mark.parametrize("how", ["own", "global"] + [f"config-{s}" for s in SECTIONS])
def test_up_dry_run_creates_nothing_and_shows_the_run_command(tmp_path, canary, engine_host, busybox_image, how):
    config = _with_section(how.split("-", 1)[1]) if how.startswith("config-") else CONFIG
    ws = Workspace(tmp_path, canary, config)
    ws.env.update(engine_host.env)
    name = unique("dryrun-up")
    args = {"own": ["up", "--dry-run"], "global": ["--dry-run", "up"]}.get(how, ["up"])
    since = time.time() - 1
    try:
        result = ws.run(*args, "--name", name, "--", "echo", "hello")
        text = result.stdout.decode() + result.stderr.decode()
        assert result.returncode == 0, text
        assert "hello" not in result.stdout.decode().replace("echo hello", "")  # the job did not run
        assert f"{engine_host.kind} run" in text and f"--name {name}" in text and "-e HF_TOKEN" in text
        assert "<stdin-shim>" in text
        assert_no_leak(text, canary, "the dry run's output")
        _assert_untouched(since, name)
    finally:
        force_remove(name)


def test_up_dry_run_json_carries_the_request_and_no_value(tmp_path, canary, busybox_image):
    ws = Workspace(tmp_path, canary)
    name = unique("dryrun-json")
    since = time.time() - 1
    result = ws.run("--json", "up", "--dry-run", "--name", name, "--", "echo", "hello")
    assert result.returncode == 0, result.stderr.decode()
    data = json.loads(result.stdout)
    assert {"image", "command", "env", "secrets", "skipped", "request"} <= set(data)
    request = data["request"]
    assert request["argv"][:4] == ["docker", "run", "--name", name] and "HF_TOKEN" in request["argv"]
    assert request["create"]["Image"] == busybox_image and request["create"]["Cmd"] == ["echo", "hello"]
    assert "HF_TOKEN" in request["secrets"] and request["pending"] == []  # the local image's entrypoint was read
    assert_no_leak(result.stdout + result.stderr, canary, "plan --json / up --dry-run --json")
    _assert_untouched(since, name)


def test_plan_json_has_the_same_request_as_the_dry_run(tmp_path, canary, busybox_image):
    ws = Workspace(tmp_path, canary)
    plan = json.loads(ws.run("--json", "plan", "--name", "same-1", "--", "true").stdout)
    dry = json.loads(ws.run("--json", "up", "--dry-run", "--name", "same-1", "--", "true").stdout)
    # the one difference: each has its own run id, which the request names as such (ids.run)
    strip = lambda req: json.loads(json.dumps(req).replace(req["ids"]["run"], "RUN"))  # noqa: E731
    assert strip(plan["request"]) == strip(dry["request"])


def test_pull_always_in_a_dry_run_pulls_nothing(tmp_path, canary, busybox_image):
    ws = Workspace(tmp_path, canary)
    image = f"localhost:5999/dryrun/absent-{unique('img')}:1"
    since = time.time() - 1
    result = ws.run("up", "--dry-run", "--pull", "always", "--image", image, "--", "true")
    assert result.returncode == 0, result.stderr.decode()
    assert "pull: always" in result.stdout.decode()
    assert _events(since, type="image", image=image) == []


@pytest.mark.parametrize("how", ["own", "global", "config-main", "config-container", "config-slurm", "config-direct"])
def test_down_dry_run_removes_nothing_and_names_what_it_would(tmp_path, canary, engine_host, busybox_image, how):
    config = _with_section(how.split("-", 1)[1]) if how.startswith("config-") else CONFIG
    ws = Workspace(tmp_path, canary, config)
    ws.env.update(engine_host.env)
    name = unique("dryrun-down")
    _runner_container(name, busybox_image)
    try:
        since = time.time() - 1
        for args in (["down", "--all"], ["down", name]):
            if how == "own":
                args = [*args, "--dry-run"]
            elif how == "global":
                args = ["--dry-run", *args]
            result = ws.run(*args)
            text = result.stdout.decode() + result.stderr.decode()
            assert result.returncode == 0, text
            assert "would remove" in text and name in text and "removed" not in text.replace("would remove", "")
        assert [e for e in _events(since, container=name) if e.get("Action") in ("stop", "kill", "destroy", "die")] == []
        assert _exists(name), "a dry run removed the container"
    finally:
        force_remove(name)


def test_container_mode_dry_run_with_clean_creates_and_removes_nothing(tmp_path, canary, busybox_image):
    ws = Workspace(tmp_path, canary, _with_section("slurm"))  # the launcher's slurm.dry_run stops `container` too
    leftover, name = unique("dryrun-clean"), unique("dryrun-mode")
    _runner_container(leftover, busybox_image)
    try:
        since = time.time() - 1
        result = ws.run("container", "--clean", "--name", name, "--", "train", "pretrain", "--config", "exp.yaml")
        text = result.stdout.decode() + result.stderr.decode()
        assert result.returncode == 0, text
        assert "--clean (dry run): would remove" in text and leftover in text
        assert "primus-cli direct -- train pretrain --config exp.yaml" in text  # the job's command, in the docker run line
        assert _exists(leftover)
        assert_no_leak(text, canary, "container --dry-run")
        _assert_untouched(since, name)
    finally:
        force_remove(leftover, name)


def test_build_dry_run_from_config_builds_nothing(tmp_path, canary):
    ws = Workspace(tmp_path, canary, _with_section("main"))
    tag = f"primus-test/dryrun-build:{unique('t')}"
    since = time.time() - 1
    result = ws.run("build", "--flavor", "rocm", "--base", "primus-test/busybox:latest", "--tag", tag)
    assert result.returncode == 0, result.stderr.decode()
    assert _events(since, type="image", image=tag) == []
    assert subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode != 0


def test_direct_dry_run_from_config_runs_nothing(tmp_path, canary):
    """`direct: {dry_run: true}`: the Primus direct launcher is not started (its marker file never appears)."""
    checkout = tmp_path / "primus"
    (checkout / "runner").mkdir(parents=True)
    marker = tmp_path / "ran"
    script = checkout / "runner" / "primus-cli-direct.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    ws = Workspace(tmp_path, canary, _with_section("direct"))
    result = ws.run("direct", "--", "train", "pretrain", env={"PRIMUS_PATH": str(checkout)})
    text = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0, text
    assert "primus-cli-direct.sh" in text and "train pretrain" in text
    assert not marker.exists()
    assert_no_leak(text, canary, "direct dry run")


def test_the_event_probe_sees_a_real_launch(tmp_path, canary, engine_host, busybox_image):
    """The control: the same probe records a real `up` (so an empty log above means nothing happened)."""
    ws = Workspace(tmp_path, canary)
    ws.env.update(engine_host.env)
    name = unique("dryrun-real")
    since = time.time() - 1
    try:
        assert ws.run("up", "--name", name, "--", "true").returncode == 0
        assert {e.get("Action") for e in _events(since, container=name)} >= {"create", "start"}
    finally:
        force_remove(name)


def _tree(root) -> dict[str, tuple]:
    """Every entry under ``root``: its mode, and a file's bytes or a link's target (names, contents, modes)."""
    found = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        body = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else None
        found[str(path.relative_to(root))] = (st.st_mode, body)
    return found


@pytest.mark.parametrize("command", [["plan", "--", "true"], ["up", "--dry-run", "--", "true"], ["submit", "--dry-run", "--", "true"],
                                     ["build", "--dry-run"], ["check"]])
def test_plan_every_dry_run_and_check_write_nothing_anywhere(tmp_path, engine_host, busybox_image, command):
    """Home, every XDG directory and the working directory are byte-identical after the command
    (no cache, no state, no probe remembered): it only reads."""
    ws = Workspace(tmp_path, trusted=False)
    ws.env.update(engine_host.env)
    ws.env.update({f"XDG_{kind}": str(tmp_path / "xdg" / kind.lower()) for kind in
                   ("CACHE_HOME", "CONFIG_HOME", "STATE_HOME", "DATA_HOME", "RUNTIME_DIR")})
    (tmp_path / "xdg").mkdir()
    before = _tree(tmp_path)
    done = subprocess.run(ws.argv(*command), cwd=ws.cwd, env=ws.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _tree(tmp_path) == before
