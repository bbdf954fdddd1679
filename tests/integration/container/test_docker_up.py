"""`up` against the real daemon: env passthrough, secrets kept out of inspect/cmdlines/files/output, exit codes."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from docker_helpers import LABEL_JOB, Workspace, containers, force_remove, inspect, read_until, unique
from engine_fixtures import assert_no_leak, process_cmdlines, sha

pytestmark = pytest.mark.docker


def test_env_passthrough_inside_the_container(ws, canary):
    # Secrets are checked by hash inside the job, so the test itself never prints them.
    job = "; ".join(
        ["env | grep -E '^(ALLOWED_VAR|LITERAL_VAR|NCCL_[A-Z_]*|UNSET_VAR|PRIMUS_[A-Z_]*)=' | sort"]
        + [f'echo "{name}_sha=$(printf %s "${name}" | sha256sum | cut -d" " -f1)"' for name in canary]
    )
    env = {"ALLOWED_VAR": "allowed value", "NCCL_DEBUG": "INFO", "NCCL_DENIED_VAR": "no", "PRIMUS_EXTRA_TOKEN": "prefix-secret-xyz"}
    result = ws.run("up", "--name", unique(), "--", "sh", "-c", job, env=env)
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert "ALLOWED_VAR=allowed value" in lines  # allowlisted, host value
    assert "LITERAL_VAR=literal value" in lines  # literal from config
    assert "NCCL_DEBUG=INFO" in lines  # prefix-matched
    assert not any(l.startswith("UNSET_VAR=") for l in lines)  # allowlisted but unset: absent
    assert not any(l.startswith("NCCL_DENIED_VAR=") for l in lines)  # denied beats the prefix rule
    assert not any(l.startswith("PRIMUS_EXTRA_TOKEN=") for l in lines)  # a secret is never forwarded by prefix
    for name, value in canary.items():  # every secret present in the job's environment, intact
        assert f"{name}_sha={sha(value)}" in lines, name
    assert b"UNSET_VAR" in result.stderr  # the skip is reported, not silent


def test_secrets_never_in_output_inspect_cmdlines_or_files(ws, canary):
    name = unique()
    # The job prints every secret (masked by the runner), then sleeps while /proc is scanned.
    job = "; ".join([f'echo "{n}=${n}"' for n in canary] + ["echo ready", "sleep 3"])
    proc = ws.popen("up", "--keep", "--name", name, "--", "sh", "-c", job)
    try:
        first = read_until(proc, b"ready")
        cmdlines = process_cmdlines()
        assert len(cmdlines) > 10
        assert_no_leak(b"\n".join(cmdlines), canary, "/proc/*/cmdline during the run")
        rest, err = proc.communicate(timeout=60)
        out = first + rest
        assert proc.returncode == 0, err.decode()
        for n in canary:
            assert f"{n}=***".encode() in out  # the job printed it; the runner masked it
        assert_no_leak(out, canary, "up's stdout")
        assert_no_leak(err, canary, "up's stderr")
        info = inspect(name)  # kept with --keep
        for field in ("Env", "Cmd", "Labels", "Entrypoint"):
            assert_no_leak(json.dumps(info["Config"][field]), canary, f"docker inspect Config.{field}")
        assert_no_leak(json.dumps(info["Args"]), canary, "docker inspect Args")
        assert_no_leak(json.dumps(info), canary, "the whole docker inspect")
        assert not any(e.split("=", 1)[0] in canary for e in info["Config"]["Env"])  # names absent too
        files = ws.written_files()
        for path, data in files.items():
            assert_no_leak(data, canary, path)
    finally:
        proc.kill()
        force_remove(name)


def test_masking_across_a_split_write(ws, canary):
    value = canary["HF_TOKEN"]
    # The first part, a pause, then the rest: two reads on the runner's side.
    job = 'printf "A:%s" "${HF_TOKEN%????????}"; sleep 0.7; printf "%s:Z\\n" "${HF_TOKEN#${HF_TOKEN%????????}}"'
    result = ws.run("up", "--name", unique(), "--", "sh", "-c", job)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"A:***:Z\n"
    assert_no_leak(result.stdout, {"HF_TOKEN": value}, "split output")


def test_values_with_any_bytes_survive_the_shim(ws):
    value = "a\\b\n\nc'\"$x`é \\0101 %s\n\n"
    job = "printf %s \"$WEIRD_SECRET\" | od -An -c"
    env = {"WEIRD_SECRET": value}
    result = ws.run("up", "--name", unique(), "--env", "WEIRD_SECRET", "--", "sh", "-c", job, env=env)
    assert result.returncode == 0, result.stderr.decode()
    expected = subprocess.run(["od", "-An", "-c"], input=value.encode(), capture_output=True).stdout
    assert result.stdout.split() == expected.split()


@pytest.mark.parametrize("code", [0, 1, 17])
def test_exit_code_is_the_jobs(ws, code):
    result = ws.run("up", "--name", unique(), "--", "sh", "-c", f"exit {code}")
    assert result.returncode == code, result.stderr.decode()


def test_oom_killed_job_exits_137_with_a_message(ws):
    name = unique()
    result = ws.run("up", "--name", name, "--memory", "16m", "--", "dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1")
    assert result.returncode == 137
    assert b"out of memory" in result.stderr
    assert containers(f"{LABEL_JOB}={name}") == []


def test_config_error_exits_2_and_creates_nothing(ws):
    name = unique()
    result = ws.run("up", "--name", name, "--env", "HF_TOKEN=literal-in-a-flag", "--", "true")
    assert result.returncode == 2, result.stderr.decode()
    assert containers(f"{LABEL_JOB}={name}") == []


@pytest.mark.engines("docker")  # no engine is reached: one run is enough
def test_unreachable_daemon_exits_1_with_the_fix(ws):
    result = ws.run("up", "--name", unique(), "--", "true", env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    assert result.returncode == 1
    assert b"not reachable" in result.stderr and b"dockerd" in result.stderr
    assert b"Traceback" not in result.stderr


def test_missing_image_with_pull_never_exits_2_with_the_fix(ws):
    result = ws.run("up", "--pull", "never", "--name", unique(), "--image", "primus-test/absent:nope", "--", "true")
    assert result.returncode == 2, result.stderr.decode()
    assert b"not present locally" in result.stderr and b"--pull missing" in result.stderr
    assert b"Traceback" not in result.stderr


def test_missing_image_is_pulled_and_an_unreachable_registry_exits_1(ws):
    """The default policy is `missing`, like docker run: a registry that does not answer is exit 1."""
    result = ws.run("up", "--name", unique(), "--image", "127.0.0.1:9/primus-test/absent:nope", "--", "true")
    assert result.returncode == 1, result.stderr.decode()
    assert b"127.0.0.1:9" in result.stderr and b"Traceback" not in result.stderr


def test_image_without_shell_is_refused_not_a_silent_env_fallback(ws, canary, noshell_image):
    """With the default secrets_via: stdin, an image the shim cannot run in is an error with
    the fix (exit 2), never a silent copy of the values into Config.Env; nothing is left."""
    name = unique()
    result = ws.run("up", "--keep", "--name", name, "--image", noshell_image, "--", "/busybox-bin/env")
    try:
        assert result.returncode == 2, result.stderr.decode()
        assert b"no /bin/sh" in result.stderr and b"secrets_via: env" in result.stderr
        assert b"Traceback" not in result.stderr
        assert_no_leak(result.stdout + result.stderr, canary, "up's output")
        with pytest.raises(subprocess.CalledProcessError):  # no container may be left
            inspect(name)
    finally:
        force_remove(name)


def test_secrets_via_env_config_is_honoured_with_a_warning(tmp_path, canary, busybox_image, engine_host):
    from docker_helpers import CONFIG

    ws = Workspace(tmp_path, canary, CONFIG.replace("  stop_timeout: 2\n", "  stop_timeout: 2\n  secrets_via: env\n"))
    ws.env.update(engine_host.env)
    name = unique()
    result = ws.run("up", "--keep", "--name", name, "--", "sh", "-c", "echo $HF_TOKEN")
    try:
        assert result.returncode == 0, result.stderr.decode()
        assert b"secrets_via is 'env'" in result.stderr
        assert result.stdout == b"***\n"
        assert "/bin/sh" not in json.dumps(inspect(name)["Config"]["Entrypoint"] or [])
    finally:
        force_remove(name)


def test_detached_job_gets_its_secrets_and_stays_out_of_inspect(ws, canary):
    name = unique()
    result = ws.run("up", "--detach", "--name", name, "--", "sh", "-c", f'echo "sha=$(printf %s "$HF_TOKEN" | sha256sum | cut -d" " -f1)"')
    try:
        assert result.returncode == 0, result.stderr.decode()
        assert result.stdout.decode().strip() == name
        subprocess.run(["docker", "wait", name], capture_output=True, timeout=60)
        expected = f"sha={sha(canary['HF_TOKEN'])}".encode()
        deadline = time.monotonic() + 30
        logs = ws.run("logs", name).stdout  # the runner's copy of the job's output (the engine keeps none)
        while expected not in logs and time.monotonic() < deadline:
            time.sleep(0.2)
            logs = ws.run("logs", name).stdout
        assert expected in logs, logs
        assert_no_leak(json.dumps(inspect(name)), canary, "docker inspect of a detached job")
    finally:
        force_remove(name)
