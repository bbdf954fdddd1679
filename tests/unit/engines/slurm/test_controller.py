"""runner.engines.slurm.controller: what ``scontrol show config`` says about accounting and KillWait."""

from __future__ import annotations

import pytest

from runner.engines.slurm import controller
from runner.errors import ConfigError

ARCHIVING = "KillWait                = 10 sec\nAccountingStoreFlags    = job_comment,job_env,job_script\n"


def test_check_warns_when_slurm_stores_job_environments():
    warn = controller.accounting_warnings("KillWait                = 10 sec\nAccountingStoreFlags    = job_comment,job_env,job_script\n")
    assert len(warn) == 1 and "job_env" in warn[0] and "job_script" in warn[0]
    assert controller.accounting_warnings("AccountingStoreFlags    = job_script\n")[0].startswith("Slurm stores batch scripts")
    assert controller.accounting_warnings("AccountingStoreFlags    = (null)\n") == []


def test_kill_wait_is_read_from_the_config():
    assert controller.kill_wait_of(ARCHIVING) == 10
    assert controller.kill_wait_of("AccountingStoreFlags = (null)\n") is None


def test_secrets_are_refused_where_accounting_archives_job_environments():
    with pytest.raises(ConfigError) as refused:
        controller.refuse_archived_secrets(ARCHIVING, ["HF_TOKEN"], allowed=False)
    assert refused.value.exit_code == 2 and "HF_TOKEN" in str(refused.value) and "allow_env_in_accounting" in str(refused.value)
    controller.refuse_archived_secrets(ARCHIVING, ["HF_TOKEN"], allowed=True)  # the project's explicit opt-in
    controller.refuse_archived_secrets(ARCHIVING, [], allowed=False)  # no secret travels
    controller.refuse_archived_secrets("AccountingStoreFlags = job_script\n", ["HF_TOKEN"], allowed=False)


def test_a_missing_client_tool_is_engine_unavailable_with_how_to_install(monkeypatch):
    from runner.errors import EngineUnavailable

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EngineUnavailable) as missing:
        controller.tool("sbatch")
    assert "sbatch not found" in str(missing.value)
