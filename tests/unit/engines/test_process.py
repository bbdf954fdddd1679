"""The process engine: a flag it cannot carry out is refused (exit 2, named), never dropped; the
program is resolved when the request is built, so the dry run shows the program the launch execs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from cli_runner import user_env


def test_flags_a_host_process_cannot_honour_are_refused_naming_each(cli, tmp_path):
    for command in (["up"], ["up", "--dry-run"], ["plan"]):
        rc, out, err = cli(*command, "--engine", "process", "--memory", "4g", "--volume", "/tmp:/x", "--", "true")
        assert rc == 2, (command, err)
        assert "the process engine cannot honour --volume, --memory" in err and "Traceback" not in err
        assert "--engine docker" in err  # the fix
    assert not (tmp_path / ".local").exists()  # refused before anything was written
    rc, out, err = cli("up", "--engine", "process", "--pull", "always", "--", "true")
    assert rc == 2 and "cannot honour --pull" in err  # up's own --pull: a host process has no image


def test_the_dry_run_names_the_program_the_launch_execs(cli):
    rc, out, err = cli("--json", "up", "--dry-run", "--engine", "process", "--", "sh", "-c", "true")
    assert rc == 0, err
    shown = json.loads(out)
    assert shown["program"] == shutil.which("sh") and shown["command"] == ["sh", "-c", "true"]
    rc, out, err = cli("--json", "up", "--dry-run", "--engine", "process", "--", "no-such-program-7f3a")
    assert rc == 0 and json.loads(out)["program"] is None  # shown as not found; the launch refuses it
    rc, out, err = cli("up", "--engine", "process", "--", "no-such-program-7f3a")
    assert rc == 2 and "no-such-program-7f3a is not installed on this host" in err  # refused before launch, as check refuses it


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_job_and_is_said_once_with_its_code(tmp_path, signum, code):
    """The child's group gets the signal; the runner says what became of the job, once, and ends with the signal's code."""
    job = "echo $$ > pid; echo started; sleep 30"
    proc = subprocess.Popen([sys.executable, "-P", "-m", "runner", "up", "--engine", "process", "--", "sh", "-c", job],
                            cwd=tmp_path, env=user_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "started\n"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    child = int((tmp_path / "pid").read_text())
    assert proc.returncode == code, err
    assert err.count(f"error: interrupted ({signal.Signals(signum).name}): process ") == 1, err
    assert "Traceback" not in err
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # the job went with the runner
