"""A cluster whose accounting archives job environments (AccountingStoreFlags=job_env) is refused
for any job whose environment carries a secret value, the agents' registry key included.

Uses this cluster's real ``scontrol show config``, with the flag set as such a cluster reports it
(the shared cluster is not reconfigured for a test).
"""

from __future__ import annotations

import re

import pytest

from plan_factory import plan_from

from runner.config import load_config
from runner.engines.base import RunContext
from runner.engines.slurm import SlurmEngine, controller
from runner.errors import ConfigError
from runner.options import RunOptions
from runner.plan import LaunchFlags
from runner.secrets import secret_scope
from runner.ui import Output

pytestmark = pytest.mark.slurm


def archiving_config() -> tuple[str, str]:
    shown = controller.show_config()
    assert "SlurmctldHost" in shown, "the real cluster's configuration"
    archiving = re.sub(r"^AccountingStoreFlags\s*=.*$", "", shown, flags=re.M) + "\nAccountingStoreFlags   = job_comment,job_env\n"
    return shown, archiving


def test_submit_refuses_a_cluster_that_archives_job_environments(slurm_cluster):
    """slurmdbd would store the forwarded secrets' values; refused (exit 2) unless the project accepts it."""
    shown, archiving = archiving_config()
    with pytest.raises(ConfigError) as refused:
        controller.refuse_archived_secrets(archiving, ["HF_TOKEN"], allowed=False)
    assert "HF_TOKEN" in refused.value.message and "allow_env_in_accounting" in str(refused.value.problems[0])
    controller.refuse_archived_secrets(archiving, ["HF_TOKEN"], allowed=True)  # the explicit opt-in
    controller.refuse_archived_secrets(archiving, [], allowed=False)  # no secret forwarded: nothing to archive
    controller.refuse_archived_secrets(shown, ["HF_TOKEN"], allowed=False)  # this cluster does not archive them


def test_the_registry_key_alone_is_refused_too(slurm_cluster, tmp_path, monkeypatch):
    """DOCKER_LOGIN_KEY is exported to every node for the agents' pull: with no other secret
    travelling, an archiving cluster is still refused before anything is submitted."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    planned = plan_from(tmp_path, "container:\n  gpu: none\n  options:\n    image: busybox\n", flags=LaunchFlags(gpu="none"), name="j")
    plan, config = planned.require(), load_config()
    assert plan.job.secret_env() == {}, "the job itself forwards no secret"
    login = {"DOCKER_LOGIN_USER": "alice", "DOCKER_LOGIN_KEY": "canary-archived-login-key-5d1f0e"}
    options = RunOptions(command=("true",), pull="never")
    _, archiving = archiving_config()
    monkeypatch.setattr("runner.engines.slurm.engine.show_config", lambda: archiving)  # the cluster's answer (read once, into the settings)
    ctx = RunContext(options, secret_scope(), Output(), SlurmEngine.settings(config, options), lookup=login.get)
    with pytest.raises(ConfigError) as refused:
        SlurmEngine().preflight(plan, ctx)
    assert "DOCKER_LOGIN_KEY" in refused.value.message
    assert "canary-archived-login-key" not in str(refused.value) + str(refused.value.hint)
    assert not (tmp_path / "primus-runs").exists()
