"""What the launching and removing commands share: the engine of a launch, and whether this is a dry run."""

from __future__ import annotations

import pytest

from runner.commands.launch import dry_run, launch_engine
from runner.errors import ConfigError, UsageError
from runner.options import Sources

# An entry only a trusted file may set, beside the launcher's dry-run switch.
_ASKS_AND_DRY = "slurm:\n  allow_env_in_accounting: true\n  dry_run: true\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    for var, sub in (("HOME", "home"), ("XDG_CACHE_HOME", "cache"), ("XDG_STATE_HOME", "state"), ("XDG_CONFIG_HOME", "config")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    for name in ("PRIMUS_PATH", "PRIMUS_RUNNER_CONFIG", "PRIMUS_RUNNER_TRUST_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(repo)
    return repo


def test_the_dry_run_switch_of_a_trusted_project_file_is_read(project):
    # down and cancel read it here: --trust-project must reach the load, or they refuse the project the launch trusted
    (project / ".primus.yaml").write_text(_ASKS_AND_DRY)
    assert dry_run(False, Sources(trust_project=True)) is True


def test_an_untrusted_project_file_is_refused_when_its_switch_is_read(project):
    (project / ".primus.yaml").write_text(_ASKS_AND_DRY)
    with pytest.raises(ConfigError) as err:
        dry_run(False, Sources())
    assert "slurm.allow_env_in_accounting" in str(err.value.problems[0])


def test_the_flag_decides_without_reading_any_file(project):
    (project / ".primus.yaml").write_text("main: [not, a, mapping")  # never parsed
    assert dry_run(True, Sources()) is True


def test_no_switch_is_no_dry_run(project):
    (project / ".primus.yaml").write_text("container:\n  dry_run: false\n")
    assert dry_run(False, Sources()) is False


def test_a_switch_the_engine_does_not_honour_is_a_usage_error_naming_it():
    with pytest.raises(UsageError) as err:
        launch_engine("slurm", keep=True, interactive=True)
    assert err.value.exit_code == 2 and "does not take --keep, -i" in str(err.value)
    assert launch_engine(None, "process").name == "process"
