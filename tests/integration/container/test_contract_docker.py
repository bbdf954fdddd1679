"""docs/cli-contract.md claims that need the real Docker daemon: every LAUNCH option reaches the
container, `--env KEY` / `--env KEY=VALUE` reach the job, an unset allowlisted name is one notice line,
and the job sees tracker settings as the clients' env and, for a Primus training command, as overrides."""

from __future__ import annotations

import pytest

from docker_helpers import CONFIG, Workspace, force_remove, inspect, unique
from engine_fixtures import assert_no_leak

pytestmark = pytest.mark.docker  # every test here runs on Docker and on Podman (engine_host)


def test_every_launch_option_reaches_the_container(ws, canary, tmp_path, engine_host):
    from runner.clients.engine_api import Engine

    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "f").write_text("from the volume\n")
    name = unique("contract")
    job = 'echo "pwd=$(pwd) uid=$(id -u) lit=$LIT_A host=$FROM_HOST words=$LIT_B"; cat /a/f; ls /dev/zero; touch /ro/x 2>/dev/null || echo ro-refused'
    try:
        result = ws.run(
            "up", "--keep", "--name", name, "--gpu", "none", "--image", "primus-test/busybox:latest",
            "--env", "FROM_HOST", "--env", "LIT_A=1", "--env", "LIT_B=two words",
            "--volume", f"{shared}:/a", "--volume", f"{shared}:/ro:ro", "--device", "/dev/null", "--device", "/dev/zero",
            "--workdir", "/w", "--shm-size", "64m", "--memory", "256m", "--cpus", "0.5",
            "--network", "bridge", "--ipc", "private", "--user", "1000:1000",
            "--", "sh", "-c", job, env={"FROM_HOST": "h v"})
        assert result.returncode == 0, result.stderr.decode()
        out = result.stdout.decode().splitlines()
        assert "pwd=/w uid=1000 lit=1 host=h v words=two words" in out
        assert "from the volume" in out and "/dev/zero" in out and "ro-refused" in out
        info = inspect(name)
        host = info["HostConfig"]
        # Podman names an image loaded without a registry localhost/NAME, and a private
        # IPC namespace "shareable" (its default kind of private namespace).
        prefix = Engine(host=engine_host.host).capabilities.image_name_prefix
        ipc = ("private",) if engine_host.kind == "docker" else ("private", "shareable")
        assert info["Name"] == f"/{name}" and info["Config"]["Image"] == f"{prefix}primus-test/busybox:latest"
        assert info["Config"]["WorkingDir"] == "/w" and info["Config"]["User"] == "1000:1000"
        assert host["ShmSize"] == 64 * 1024 * 1024 and host["Memory"] == 256 * 1024 * 1024
        assert host["NanoCpus"] == 500_000_000
        assert host["NetworkMode"] == "bridge" and host["IpcMode"] in ipc
        assert {d["PathOnHost"] for d in host["Devices"]} >= {"/dev/null", "/dev/zero"}
        binds = host.get("Binds") or [f"{m['Source']}:{m['Destination']}" for m in info["Mounts"]]
        assert any(b.startswith(f"{shared}:/a") for b in binds) and any(b.startswith(f"{shared}:/ro") for b in binds)
        assert_no_leak(result.stdout + result.stderr, canary, "up output")
    finally:
        force_remove(name)


def test_unset_allowlisted_name_is_one_notice_line_at_up(ws):
    result = ws.run("up", "--name", unique(), "--", "true")
    assert result.returncode == 0, result.stderr.decode()
    lines = [line for line in result.stderr.decode().splitlines() if "UNSET_VAR" in line]
    assert len(lines) == 1 and lines[0].startswith("notice:"), lines


def test_job_exit_code_and_config_error_before_launch(ws):
    assert ws.run("up", "--name", unique(), "--", "sh", "-c", "exit 42").returncode == 42
    refused = ws.run("up", "--name", unique(), "--env", "HF_TOKEN=literal", "--", "true")
    assert refused.returncode == 2 and b"HF_TOKEN" in refused.stderr


def test_job_sees_tracker_settings_as_env_and_primus_overrides(tmp_path, canary, busybox_image, engine_host):
    trackers = ("trackers:\n  framework: megatron\n  disable_wandb: false\n  wandb_project: proj-c\n  wandb_entity: team-c\n"
                "  wandb_exp_name: exp-c\n  wandb_save_dir: /wb\n")
    ws = Workspace(tmp_path, canary, config=CONFIG + trackers)
    ws.env.update(engine_host.env)
    job = 'env | grep "^WANDB_" | grep -v API_KEY | sort; echo "ARGS $*"'
    result = ws.run("up", "--name", unique(), "--env", "WANDB_MODE=offline", "--volume", f"{tmp_path}:/wb",
                    "--", "sh", "-c", job, "sh", "train", "pretrain", "--config", "x.yaml")
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode().splitlines()
    for line in ("WANDB_PROJECT=proj-c", "WANDB_ENTITY=team-c", "WANDB_NAME=exp-c", "WANDB_DIR=/wb", "WANDB_MODE=offline"):
        assert line in out, (line, out)
    assert any(line.startswith("WANDB_RUN_ID=") and len(line) > len("WANDB_RUN_ID=") for line in out)
    args = next(line for line in out if line.startswith("ARGS ")).split()
    # One token each, as a literal Primus's legacy parser evaluates back to the configured value and type.
    for token in ("--wandb_project='proj-c'", "--wandb_entity='team-c'", "--wandb_exp_name='exp-c'", "--disable_wandb=false"):
        assert token in args, (token, args)
    assert_no_leak(result.stdout + result.stderr, canary, "up output")
