"""The CLI side of `up -i/-t`, `shell`, and docker run's `--entrypoint`, `--label`, `--platform`:
refusals before anything starts (exit 2), what `plan` shows, and what completion offers."""

from __future__ import annotations

import json
import subprocess
import sys

from cli_runner import run_cli, user_env
from ux_helpers import NO_DOCKER

PROJECT = "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n"


def _no_tty(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-m", "runner", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                          env=user_env(cwd, {"DOCKER_HOST": NO_DOCKER}), capture_output=True, text=True, timeout=120)


def test_t_without_a_terminal_is_refused_as_docker_refuses_it(tmp_path):
    (tmp_path / ".primus.yaml").write_text(PROJECT)
    for args in (("up", "-it", "--", "sh"), ("up", "-t", "--", "sh"), ("up", "--tty", "--", "sh"), ("shell",)):
        result = _no_tty(tmp_path, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert "the input device is not a TTY" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / ".local" / "state" / "primus-runner").exists()  # refused before any run was recorded


def test_i_and_t_do_not_go_with_detach_and_shell_takes_no_command(tmp_path):
    (tmp_path / ".primus.yaml").write_text(PROJECT)
    detached = _no_tty(tmp_path, "up", "-i", "-d", "--", "sh")
    assert detached.returncode == 2 and "--detach" in detached.stderr
    shell = _no_tty(tmp_path, "shell", "--", "ls")
    assert shell.returncode == 2 and "up -it -- ls" in shell.stderr


def test_dry_runs_render_the_terminal_the_entrypoint_the_labels_and_the_platform(tmp_path):
    (tmp_path / ".primus.yaml").write_text(PROJECT)
    result = _no_tty(tmp_path, "--json", "up", "--dry-run", "-it", "--entrypoint", "/bin/echo", "--label", "team=ml",
                     "--platform", "linux/arm64", "--", "hi")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["entrypoint"] == "/bin/echo" and doc["platform"] == "linux/arm64" and doc["labels"]["team"] == "ml"
    argv = doc["request"]["argv"]
    for flag in ("--interactive", "--tty"):
        assert flag in argv
    assert argv[argv.index("--platform") + 1] == "linux/arm64" and "team=ml" in argv
    assert argv[argv.index("--entrypoint") + 1] == "/bin/echo" and argv[-1] == "hi"
    text = run_cli(tmp_path, "--verbose", "plan", "--entrypoint", "/bin/echo", "--label", "team=ml", "--platform", "linux/arm64", "--", "hi",
                   env={"DOCKER_HOST": NO_DOCKER})
    assert text.returncode == 0, text.stderr
    for shown in ("entrypoint", "/bin/echo", "platform", "linux/arm64", "labels", "team=ml", "--platform linux/arm64"):
        assert shown in text.stdout, shown
    shell = _no_tty(tmp_path, "--json", "shell", "--dry-run")
    assert shell.returncode == 0, shell.stderr
    assert json.loads(shell.stdout)["command"][:2] == ["/bin/sh", "-c"] and "bash" in json.loads(shell.stdout)["command"][2]


def test_a_label_may_not_override_the_runners_own(tmp_path):
    (tmp_path / ".primus.yaml").write_text(PROJECT)
    result = run_cli(tmp_path, "plan", "--label", "io.primus-runner.owner=0", "--", "true", env={"DOCKER_HOST": NO_DOCKER})
    assert result.returncode == 2
    assert "io.primus-runner.owner" in result.stderr and "the runner's own labels" in result.stderr


def test_completion_knows_shell_and_the_new_flags(tmp_path):
    script = run_cli(tmp_path, "completion", "bash").stdout
    for word in ("shell", "--interactive", "--tty", "--entrypoint", "--label", "--platform"):
        assert word in script, word
    fish = run_cli(tmp_path, "completion", "fish").stdout
    assert "-a shell -d 'an interactive shell in the job\\'s image" in fish
    assert "__fish_seen_subcommand_from up' -s t -l tty" in fish and "__fish_seen_subcommand_from up' -s i -l interactive" in fish


def test_the_launchers_container_mode_takes_entrypoint_and_platform_as_up_does(tmp_path):
    (tmp_path / ".primus.yaml").write_text(PROJECT)
    result = _no_tty(tmp_path, "--json", "--dry-run", "container", "--entrypoint", "/bin/echo", "--platform", "linux/arm64",
                     "--", "train", "pretrain")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["entrypoint"] == "/bin/echo" and doc["platform"] == "linux/arm64"
    argv = doc["request"]["argv"]
    assert argv[argv.index("--platform") + 1] == "linux/arm64" and argv[argv.index("--entrypoint") + 1] == "/bin/echo"
    image = argv.index(doc["image"])
    assert argv[image + 1:image + 3] == ["primus-cli", "direct"]  # the direct launcher is the entrypoint's arguments
    tty = _no_tty(tmp_path, "--dry-run", "container", "--tty", "--", "train")
    assert tty.returncode == 2 and "primus-runner shell" in tty.stderr
