"""What ``sbatch`` is given besides its argument list: the job's values on its stdin, none in its environment."""

from __future__ import annotations

import pytest

from plan_factory import plan_from_layer

from runner.engines.base import RunContext
from runner.engines.slurm import SlurmEngine, submit
from runner.errors import ConfigError
from runner.options import LaunchFlags, RunOptions
from runner.secrets import Secret
from runner.ui import Output

CANARY = "canary-slurm-stdin-5e0c7a13b9"
LAYER = {"container": {"gpu": "none", "options": {"image": "busybox", "env": ["HF_TOKEN", "SLURM_CONF=./slurm.conf", "SBATCH_EXPORT=ALL"]}}}


@pytest.fixture
def request_(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    config, planned = plan_from_layer(LAYER, ["true"], host={"HF_TOKEN": CANARY}, flags=LaunchFlags(name="j"))
    engine, options = SlurmEngine(), RunOptions(command=("true",))
    ctx = RunContext(options, planned.scope, Output(), engine.settings(config, options), lookup={}.get)
    return engine.request(planned.require(), ctx)


def entries(data: bytes) -> dict[str, str]:
    assert data.endswith(b"\0")
    return dict(item.split("=", 1) for item in data.decode().split("\0")[:-1])


def test_every_job_variable_travels_under_the_runners_prefix_with_path_and_digest(request_):
    given = entries(submit.job_environment(request_, "d1g", {}, "/u/bin:/bin"))
    assert given == {"PRIMUS_RUNNER_ENV_HF_TOKEN": CANARY, "PRIMUS_RUNNER_ENV_SLURM_CONF": "./slurm.conf",
                     "PRIMUS_RUNNER_ENV_SBATCH_EXPORT": "ALL", "PATH": "/u/bin:/bin", "PRIMUS_RUNNER_PLAN_SHA256": "d1g"}
    assert "--export-file=/dev/stdin" in request_.command() and "--export=PATH" in request_.command()


def test_a_value_holding_nul_is_refused(request_, monkeypatch):
    from dataclasses import replace

    with pytest.raises(ConfigError, match="BAD holds a NUL"):
        submit.job_environment(request_.with_run_env({"BAD": "a\0b"}), "d", {}, "/bin")


def test_agent_values_keep_their_own_names(request_):
    from dataclasses import replace

    given = entries(submit.job_environment(replace(request_, agent_env=("DOCKER_LOGIN_KEY",)), "d", {"DOCKER_LOGIN_KEY": Secret("k3y")}, "/bin"))
    assert given["DOCKER_LOGIN_KEY"] == "k3y"


def test_output_patterns_expand_as_slurm_expands_them(monkeypatch):
    import getpass

    monkeypatch.setenv("SLURMD_NODENAME", "n1")
    user = getpass.getuser()
    assert submit.expand_filename("logs/%x-%j.out", "42", "train") == "logs/train-42.out"
    assert submit.expand_filename("%u/%A_%a.%N.%%", "42", "t") == f"{user}/42_4294967294.n1.%"
    assert submit.expand_filename("job%8j.out", "42", "t") == "job00000042.out"


def test_a_registry_login_from_the_env_file_reaches_the_nodes_as_the_request_named_it(tmp_path, monkeypatch):
    """The request names the agent's login (found by the lookup: environment, then env file); ``launch``
    hands sbatch exactly those values, whatever the process environment holds by then."""
    from runner.engines import slurm as slurm_engine
    from runner.engines.base import Connection

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("DOCKER_LOGIN_USER", "DOCKER_LOGIN_KEY", "DOCKER_LOGIN_REGISTRY"):
        monkeypatch.delenv(name, raising=False)
    env_file = {"DOCKER_LOGIN_USER": "robot", "DOCKER_LOGIN_KEY": CANARY, "DOCKER_LOGIN_REGISTRY": "registry.example"}
    config, planned = plan_from_layer(LAYER, ["true"], host={}, flags=LaunchFlags(name="j"))
    engine, options = SlurmEngine(), RunOptions(command=("true",))
    ctx = RunContext(options, planned.scope, Output(), engine.settings(config, options), lookup=env_file.get)
    request = engine.request(planned.require(), ctx)
    assert set(env_file) <= set(request.agent_env)
    given = {}
    monkeypatch.setattr(slurm_engine.engine, "make_job_dir", lambda path: None)
    monkeypatch.setattr(slurm_engine.engine, "link_output", lambda request, job_id: None)
    monkeypatch.setattr(slurm_engine.engine, "sbatch", lambda request, masker, values: given.update(values) or "42")
    engine.launch(request, Connection(ctx.out, ctx.scope))
    shown = {name: value.reveal() if isinstance(value, Secret) else value for name, value in given.items() if name in env_file}
    assert shown == env_file
    assert isinstance(given["DOCKER_LOGIN_KEY"], Secret)
