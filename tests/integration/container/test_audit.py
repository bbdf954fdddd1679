"""`primus-runner audit` against real containers, images and files: finds every planted canary
by NAME and location, says clean when there is nothing, and never prints a value itself."""

from __future__ import annotations

import base64
import io
import json
import tarfile

import pytest

from docker_helpers import LABEL, Workspace, force_remove, unique
from engine_fixtures import assert_no_leak


@pytest.fixture
def ws(tmp_path, canary) -> Workspace:
    return Workspace(tmp_path, canary)


def audit(ws: Workspace, canary, *targets: str, env: dict | None = None):
    result = ws.run("--json", "audit", *targets, env=env)
    assert_no_leak(result.stdout + result.stderr, canary, "audit output")
    assert "Traceback" not in result.stderr.decode()
    return result, (json.loads(result.stdout) if result.stdout.strip() else None)


# ------------------------------------------------------------------ files (no engine)

def test_files_and_dirs_leaks_by_name_line_and_encoding(ws, canary):
    logs = ws.root / "slurm-logs"
    (logs / "rank1").mkdir(parents=True)
    (logs / "rank0.out").write_text("step 1\nstep 2\n" + f"token is {canary['HF_TOKEN']}\n")
    (logs / "rank1" / "env.json").write_text(json.dumps({"k": "x" * 3 + base64.b64encode(canary["WANDB_API_KEY"].encode()).decode()}))
    (logs / "clean.txt").write_text("nothing here\n")
    result, doc = audit(ws, canary, str(logs))
    assert result.returncode == 4, result.stderr
    assert doc["clean"] is False
    assert {"secret": "HF_TOKEN", "location": f"{logs}/rank0.out:3"} in doc["findings"]
    assert {"secret": "WANDB_API_KEY", "location": f"{logs}/rank1/env.json:1"} in doc["findings"]
    assert not any("clean.txt" in f["location"] for f in doc["findings"])
    human = ws.run("audit", str(logs))
    assert human.returncode == 4 and f"HF_TOKEN at {logs}/rank0.out:3".encode() in human.stdout
    assert_no_leak(human.stdout + human.stderr, canary, "audit human output")


def test_a_value_split_across_the_read_chunks_is_found_with_its_line(ws, canary):
    from runner.commands.audit import CHUNK

    value = canary["DATABRICKS_TOKEN"].encode()
    big = ws.root / "big.log"
    head = b"line\n" * 1000
    pad = b"x" * (CHUNK - len(head) - len(value) // 2)  # the value straddles the first chunk boundary
    big.write_bytes(head + pad + value + b"\n" + b"y\n" * 200_000)
    result, doc = audit(ws, canary, str(big))
    assert result.returncode == 4
    assert doc["findings"] == [{"secret": "DATABRICKS_TOKEN", "location": f"{big}:1001"}]


def test_clean_files_exit_0(ws, canary):
    (ws.root / "out").mkdir()
    (ws.root / "out" / "a.log").write_text("loss 0.1\n")
    result, doc = audit(ws, canary, str(ws.root / "out"))
    assert result.returncode == 0, result.stderr
    assert doc["clean"] is True and doc["findings"] == []
    assert sorted(doc["secrets"]) == sorted(canary)


def test_audit_works_with_a_broken_config(ws, canary):
    (ws.cwd / ".primus.yaml").write_text("container:\n  optionz: {}\n")
    (ws.root / "leak.txt").write_text(canary["MLFLOW_TRACKING_TOKEN"])
    result, doc = audit(ws, canary, str(ws.root / "leak.txt"))
    assert result.returncode == 4
    assert doc["findings"] == [{"secret": "MLFLOW_TRACKING_TOKEN", "location": f"{ws.root}/leak.txt:1"}]
    assert b"config problem" in result.stderr


def test_env_file_secrets_are_in_scope(ws, canary):
    env_file = ws.cwd / ".env"
    env_file.write_text("MY_SERVICE_TOKEN=file-only-canary-4f1e9a0b77\n")
    env_file.chmod(0o600)
    (ws.root / "leak.txt").write_text("a\nb file-only-canary-4f1e9a0b77\n")
    result, doc = audit(ws, ["file-only-canary-4f1e9a0b77", *canary.values()], str(ws.root / "leak.txt"))
    assert result.returncode == 4
    assert doc["findings"] == [{"secret": "MY_SERVICE_TOKEN", "location": f"{ws.root}/leak.txt:2"}]


def test_unknown_target_is_exit_2(ws, canary, docker_client):
    result, _ = audit(ws, canary, "no-such-thing-" + unique())
    assert result.returncode == 2 and b"not a file, directory, container or image" in result.stderr


# ------------------------------------------------------------------ containers and images

@pytest.mark.docker
def test_leaky_container_is_reported_by_field(ws, canary, docker_client, busybox_image):
    name = unique("leaky")
    secret = canary["HF_TOKEN"]
    docker_client.containers.create(
        busybox_image, ["sh", "-c", "echo " + secret], name=name,
        environment={"PLAIN": "ok", "HF_TOKEN": secret},
        labels={LABEL: "true", "note": base64.b64encode(secret.encode()).decode()},
    )
    try:
        result, doc = audit(ws, canary, name)
        assert result.returncode == 4, result.stderr
        locations = {f["location"] for f in doc["findings"] if f["secret"] == "HF_TOKEN"}
        assert any(loc.startswith(f"container {name}: Config.Env[") for loc in locations), locations
        assert f"container {name}: Config.Labels.note" in locations
        assert f"container {name}: Config.Cmd[2]" in locations
        assert f"container {name}: Args[1]" in locations
        # With no target, the runner's own containers (by label) are audited too.
        result, doc = audit(ws, canary)
        assert result.returncode == 4
        assert any(f["location"].startswith(f"container {name}: ") for f in doc["findings"])
    finally:
        force_remove(name)


@pytest.mark.docker
def test_container_started_by_up_is_clean(ws, canary, busybox_image):
    name = unique("clean")
    started = ws.run("up", "--keep", "--name", name, "--", "sh", "-c", 'test -n "$HF_TOKEN"')
    try:
        assert started.returncode == 0, started.stderr
        result, doc = audit(ws, canary, name)
        assert result.returncode == 0, doc
        assert doc == {"clean": True, "findings": [], "scanned": [name], "secrets": sorted(canary)}
    finally:
        force_remove(name)


@pytest.mark.docker
def test_up_with_audit_passes_on_a_clean_launch(ws, canary, busybox_image):
    result = ws.run("up", "--audit", "--name", unique(), "--", "true")
    assert result.returncode == 0, result.stderr
    assert_no_leak(result.stdout + result.stderr, canary, "up --audit")


@pytest.mark.docker
def test_leaky_image_config_history_and_layer_file(ws, canary, docker_client, busybox_image):
    secret = canary["WANDB_API_KEY"]
    tag = f"primus-test/leaky:{unique()}"
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        dockerfile = (
            f"FROM {busybox_image}\n"
            f"LABEL leaked={secret}\n"
            f"RUN echo 'wandb: {secret}' > /etc/leak.conf\n"
        ).encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
    context.seek(0)
    docker_client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True)
    try:
        result, doc = audit(ws, canary, tag)
        assert result.returncode == 4, result.stderr
        locations = {f["location"] for f in doc["findings"] if f["secret"] == "WANDB_API_KEY"}
        assert f"image {tag}: Config.Labels.leaked" in locations
        assert any(loc.startswith(f"image {tag}: history[") and loc.endswith(".created_by") for loc in locations)
        assert any(loc.startswith(f"image {tag}: layer ") and loc.endswith("etc/leak.conf:1") for loc in locations), locations
        clean, doc = audit(ws, canary, busybox_image)
        assert clean.returncode == 0 and doc["clean"] is True
    finally:
        docker_client.images.remove(tag, force=True)


@pytest.mark.docker
def test_audit_with_no_daemon_still_scans_files_and_targets_say_exit_1(ws, canary):
    dead = {"DOCKER_HOST": f"unix://{ws.root}/dead.sock"}
    result, doc = audit(ws, canary, env=dead)  # default targets: containers skipped with a warning
    assert result.returncode == 0 and b"is not reachable" in result.stderr and b"containers not audited" in result.stderr
    result, _ = audit(ws, canary, "some-container", env=dead)
    assert result.returncode == 1 and b"not reachable" in result.stderr and b"start" in result.stderr
