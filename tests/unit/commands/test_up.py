"""``up [LAUNCH] [--detach] [--dry-run] -- CMD…``: the job on the engine ``--engine`` names, its output
streamed, its exit code returned; a dry run starts and writes nothing; the terminal switches are
checked before anything starts."""

from __future__ import annotations

import subprocess

from cli_runner import files_under


def test_up_runs_the_job_and_returns_its_exit_code(cli, tmp_path):
    rc, out, err = cli("up", "--engine", "process", "--", "sh", "-c", "echo job-said-hello; touch ran; exit 7")
    assert rc == 7, err
    assert "job-said-hello" in out and (tmp_path / "ran").exists()


def test_up_dry_run_starts_nothing_and_writes_nothing(cli, tmp_path):
    before = files_under(tmp_path)
    rc, out, err = cli("up", "--dry-run", "--engine", "process", "--", "sh", "-c", "touch ran")
    assert rc == 0, err
    assert "command  sh -c 'touch ran'" in out
    assert files_under(tmp_path) == before


def test_the_global_dry_run_is_ups_dry_run(cli, tmp_path):
    before = files_under(tmp_path)
    rc, _, err = cli("--dry-run", "up", "--engine", "process", "--", "sh", "-c", "touch ran")
    assert rc == 0, err
    assert files_under(tmp_path) == before


def test_a_switch_the_engine_does_not_honour_is_exit_2_before_anything(cli, tmp_path):
    rc, _, err = cli("up", "--keep", "--engine", "process", "--", "sh", "-c", "touch ran")
    assert rc == 2 and "the process engine does not take --keep" in err, err
    assert not (tmp_path / "ran").exists()


def test_a_tty_without_a_terminal_is_refused_before_the_job_starts(cli, tmp_path):
    rc, _, err = cli("up", "-t", "--", "sh", "-c", "touch ran", stdin=subprocess.DEVNULL)
    assert rc == 2 and "the input device is not a TTY" in err, err
    assert not (tmp_path / "ran").exists()


def test_a_terminal_and_detach_do_not_go_together(cli):
    rc, _, err = cli("up", "-i", "--detach", "--", "true")
    assert rc == 2 and "-i/-t and --detach do not go together" in err, err

