"""``shell [LAUNCH]``: ``up -it`` running the image's bash (else sh) on the default engine; it takes no
command; its dry run shows the shell and needs no terminal."""

from __future__ import annotations

import json
import subprocess

from cli_runner import files_under

CONFIG = "container:\n  gpu: none\n  options:\n    image: busybox:1\n"


def test_shell_takes_no_command(cli, tmp_path):
    (tmp_path / ".primus.yaml").write_text(CONFIG)
    rc, _, err = cli("shell", "--", "ls", "-l")
    assert rc == 2 and "shell takes no command" in err and "primus-runner up -it -- ls -l" in err, err


def test_a_dry_shell_is_the_images_shell_with_a_terminal_and_writes_nothing(cli, tmp_path):
    (tmp_path / ".primus.yaml").write_text(CONFIG)
    before = files_under(tmp_path)
    rc, out, err = cli("--json", "shell", "--dry-run", stdin=subprocess.DEVNULL)
    assert rc == 0, err
    plan = json.loads(out)
    assert plan["command"] == ["/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash; fi; exec sh"]
    assert plan["image"] == "busybox:1"
    assert (plan["request"]["create"]["Tty"], plan["request"]["create"]["OpenStdin"]) == (True, True)
    assert files_under(tmp_path) == before


def test_shell_without_a_terminal_is_refused(cli, tmp_path):
    (tmp_path / ".primus.yaml").write_text(CONFIG)
    rc, _, err = cli("shell", stdin=subprocess.DEVNULL)
    assert rc == 2 and "the input device is not a TTY" in err, err
