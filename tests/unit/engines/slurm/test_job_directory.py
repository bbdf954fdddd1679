"""runner.engines.slurm.job_directory: a job directory no other user controls, its files private."""

from __future__ import annotations

import os

import pytest

from runner.engines.slurm import job_directory
from runner.engines.slurm.flags import SlurmFlags
from runner.engines.slurm.script import PLAN_FILE
from runner.errors import ConfigError, RuntimeFailure
from runner.secrets import Masker

CANARY = "canary-slurm-jobdir-3c9e1a77"


def test_a_parent_owned_by_another_user_is_refused(tmp_path):
    parent = tmp_path / "shared-runs"
    parent.mkdir(mode=0o755)
    os.chown(parent, 65534, 65534)  # nobody's (the tests run as root, which may hand it over)
    with pytest.raises(ConfigError) as info:
        job_directory.make_job_dir(parent / "job-1")
    assert "another user" in str(info.value)
    assert not (parent / "job-1").exists()


def test_a_parent_others_may_write_to_is_refused_unless_sticky(tmp_path):
    parent = tmp_path / "open-runs"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(ConfigError):
        job_directory.make_job_dir(parent / "job-1")
    parent.chmod(0o1777)  # like /tmp: others cannot rename what is yours
    made = job_directory.make_job_dir(parent / "job-2")
    assert made.stat().st_mode & 0o777 == 0o700


def test_write_private_refuses_a_secret(tmp_path):
    with pytest.raises(ConfigError):
        job_directory.write_private(tmp_path / "f", f"echo {CANARY}", Masker([CANARY]))
    assert not (tmp_path / "f").exists()
    job_directory.write_private(tmp_path / "g", "names only", Masker([CANARY]))
    assert (tmp_path / "g").stat().st_mode & 0o777 == 0o600


def test_the_job_directory_named_is_a_free_one_under_output_dir(tmp_path, monkeypatch):
    from runner.config import load_config
    from runner.engines.slurm.settings import settings_from

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".primus.yaml").write_text(f"slurm:\n  output_dir: {tmp_path / 'runs'}\n")
    settings = settings_from(load_config(), SlurmFlags())
    first = job_directory.job_dir_for(settings, "my job/1")
    assert first.parent == tmp_path / "runs" and first.name.endswith("-my_job_1") and not first.exists()
    job_directory.make_job_dir(first)
    (first / PLAN_FILE).write_text("{}")
    second = job_directory.job_dir_for(settings, "my job/1")
    assert second != first and not second.exists()
    with pytest.raises(RuntimeFailure):
        job_directory.make_job_dir(first)  # a submitted job's directory is never reused
