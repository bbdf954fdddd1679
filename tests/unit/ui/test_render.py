"""The human plan views: rich tables for terminals, plain text for pipes; never a value of a secret."""

from __future__ import annotations

import io
import json

from rich.console import Console

from plan_factory import plan_from

from runner.ui.render import plan_tables, plan_text

CANARY = "canary-render-41d0c2f7aa"


def _plan(work):
    host = {"HF_TOKEN": CANARY, "ODD": "[bold]not markup[/bold]"}
    config = "container:\n  options:\n    image: busybox\n    env: [HF_TOKEN, ODD]\n"
    return plan_from(work, config, ["echo", "hi there"], host=host, flags=["--gpu", "none"]).plan


def test_tables_show_values_literally_and_secrets_as_mask(work):
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, force_terminal=False)
    for table in plan_tables(_plan(work)):
        console.print(table)
    text = buffer.getvalue()
    assert "[bold]not markup[/bold]" in text  # a value is text, never rich markup
    assert "HF_TOKEN" in text and "***" in text and CANARY not in text


def test_plain_text_quotes_the_command_and_hides_secrets(work):
    text = plan_text(_plan(work))
    assert "echo 'hi there'" in text
    assert "HF_TOKEN=*** [secret]" in text and CANARY not in text


def test_plan_shows_sizes_as_written_and_overrides_as_a_person_reads_them_while_json_stays_exact(tmp_path):
    from cli_runner import run_cli

    (tmp_path / ".primus.yaml").write_text(
        "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n    shm-size: 64g\n    memory: 32g\n"
        "trackers:\n  framework: megatron\n  disable_tensorboard: false\n  tensorboard_dir: /tmp/tb\n")
    command = ("primus-cli", "direct", "--", "train", "pretrain", "--config", "exp.yaml")
    shown = run_cli(tmp_path, "--trust-project", "--verbose", "plan", "--", *command)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "--shm-size 64g" in text and "--memory 32g" in text, text
    assert str(64 << 30) not in text and str(32 << 30) not in text
    assert "\"--tensorboard_dir='/tmp/tb'\"" in text and "'\"'\"'" not in text, text
    exact = json.loads(run_cli(tmp_path, "--trust-project", "--json", "plan", "--", *command).stdout)
    assert "--tensorboard_dir='/tmp/tb'" in exact["command"]
    assert exact["request"]["create"]["HostConfig"]["ShmSize"] == 64 << 30


def test_plan_is_about_a_screen_by_default_and_whole_with_verbose(tmp_path):
    from cli_runner import run_cli

    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n"
                                           "    env: [HF_TOKEN, PLAIN_SET, NOT_SET_HERE]\n")
    env = {"HF_TOKEN": CANARY, "PLAIN_SET": "plain-value"}
    short = run_cli(tmp_path, "--trust-project", "plan", "--", "python", "train.py", env=env)
    assert short.returncode == 0, short.stderr
    lines = short.stdout.splitlines()
    assert len(lines) <= 15, short.stdout
    rows = {line.split("  ", 1)[0]: line.split("  ", 1)[1].strip() for line in lines if "  " in line and not line.startswith("(")}
    assert rows["image"] == "primus-test/busybox:latest" and rows["command"] == "python train.py" and rows["gpus"] == "none"
    assert "HF_TOKEN=***" in rows["env"] and "PLAIN_SET=plain-value" in rows["env"] and "NOT_SET_HERE" in rows["not set"]
    assert "docker run" not in short.stdout and "plan --verbose" in lines[-1]
    full = run_cli(tmp_path, "--trust-project", "--verbose", "plan", "--", "python", "train.py", env=env)
    assert full.returncode == 0 and "docker run" in full.stdout and "NOT_SET_HERE   (allowlist: unset)" in full.stdout
    assert CANARY not in short.stdout + short.stderr + full.stdout + full.stderr
