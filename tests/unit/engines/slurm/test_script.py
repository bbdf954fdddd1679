"""Slurm backend, the parts that need no cluster: script, plan file, settings, Slurm's text formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
import pytest

from plan_factory import plan_from


from runner.engines.slurm import agent
from runner.engines.slurm import script as slurm_script
from runner.engines.slurm.settings import settings_from
from runner.config import load_config
from runner.config.envfile import EnvFile
from runner.errors import ConfigError
from runner.plan import LaunchFlags
from runner.secrets import Secret, encodings

CANARY = "canary-slurm-unit-7f3a91c2d4e5"
FILE_CANARY = "canary-slurm-envfile-0b9e8d7c6a"
NOT_LISTED = "canary-slurm-notlisted-55aa33"

def args(**kw):
    from runner.engines.slurm.flags import SlurmFlags

    return SlurmFlags(**kw)


def make_plan(gpu="none", command=("sh", "-c", "echo hi")):
    host = {"FOO": "foo-value", "HF_TOKEN": CANARY, "UNLISTED_TOKEN": NOT_LISTED, "NODE_RANK": "7"}
    env_file = EnvFile("/x/.env", {"MY_API_KEY": FILE_CANARY})
    per_node = [(n, "(per node)") for n in slurm_script.COMPUTED]
    return plan_from(Path.cwd(), None, command, host=host, env_file=env_file, flags=["--gpu", gpu], extra_env=per_node)


def assert_no_value(text: str):
    for value in (CANARY, FILE_CANARY, NOT_LISTED):
        for form in encodings(value):
            assert form.decode() not in text


def test_script_has_names_only_and_an_explicit_export_list(work):
    planned = make_plan()
    plan = planned.require()
    script = slurm_script.render_script(plan, settings_from(load_config(), args(nodes=2)), work / "job")
    assert_no_value(script)
    assert "set -x" not in script and "ALL" not in script
    export = next(line for line in script.splitlines() if line.startswith("#SBATCH --export="))
    assert export == "#SBATCH --export=PATH", "the job takes nothing else from sbatch's environment"
    srun = next(line for line in script.splitlines() if line.startswith("srun "))
    names = srun.split("--export=", 1)[1].split()[0].split(",")
    carried = {f"PRIMUS_RUNNER_ENV_{n}" for n in ("FOO", "HF_TOKEN", "MY_API_KEY", "LIT")}
    assert set(names) == carried | {"PATH", "PRIMUS_RUNNER_PLAN_SHA256", "PRIMUS_MASTER_NODEADDR"}
    assert "ALL" not in names and "UNLISTED_TOKEN" not in names
    assert not {f"PRIMUS_RUNNER_ENV_{n}" for n in slurm_script.COMPUTED} & set(names), "per-node values are computed on the node, never exported"
    assert "#SBATCH --nodes=2" in script and "#SBATCH --partition=debug" in script and "#SBATCH --account=proj1" in script
    assert "#SBATCH --exclusive" in script
    assert "--gpus-per-node" not in script  # --gpu none requests no GPUs
    srun = next(line for line in script.splitlines() if line.startswith("srun "))
    assert "--ntasks-per-node=1" in srun and "--kill-on-bad-exit=1" in srun
    entry = Path(slurm_script.__file__).with_name("entry.py")
    assert f"{sys.executable} -S -P {entry} --path {slurm_script.agent_path()} node-agent {work / 'job' / 'plan.json'}" in srun
    assert "node-agent --cleanup" in script


def test_script_is_valid_bash(work):
    plan = make_plan().require()
    script = slurm_script.render_script(plan, settings_from(load_config(), args()), work / "dir with space")
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert '#SBATCH --output="' in script


def test_gpus_requested_for_a_gpu_flavor(work):
    plan = make_plan(gpu="rocm").require()
    script = slurm_script.render_script(plan, settings_from(load_config(), args(gpus_per_node=8)), work)
    assert "#SBATCH --gpus-per-node=8" in script


def test_gpus_are_asked_of_slurm_only_by_the_users_flags_or_files(slurm_project, work):
    """slurm.gpus_per_node's built-in 8 (the launcher's own default) never becomes a directive: a cluster
    without GresTypes=gpu would refuse the job; a user's file or flag asks for it."""
    plan = make_plan(gpu="rocm").require()
    script = slurm_script.render_script(plan, settings_from(load_config(), args()), work)
    assert "--gpus-per-node" not in script
    (work / ".primus.yaml").write_text(slurm_project + "  gpus_per_node: 4\n")
    script = slurm_script.render_script(plan, settings_from(load_config(), args()), work)
    assert "#SBATCH --gpus-per-node=4" in script
    flagged = settings_from(load_config(), args(gpus_per_node=2, args=("--gpus-per-node=2",)))
    assert "--gpus-per-node" not in slurm_script.render_script(plan, flagged, work), "on sbatch's command line already"


def test_plan_document_has_names_only_and_round_trips(work):
    plan = make_plan().require()
    settings = settings_from(load_config(), args(nodes=2))
    doc = slurm_script.plan_document(plan, settings, work / "job", kill_wait=10)
    text = json.dumps(doc)
    assert_no_value(text)
    assert "foo-value" not in text and "hello" not in text, "values of any kind come from the node's environment"
    assert {e["name"]: e["secret"] for e in doc["plan"]["env"]} == {"FOO": False, "HF_TOKEN": True, "MY_API_KEY": True, "LIT": False}

    node_env = {"PRIMUS_RUNNER_ENV_FOO": "foo-value", "PRIMUS_RUNNER_ENV_HF_TOKEN": CANARY, "PRIMUS_RUNNER_ENV_MY_API_KEY": FILE_CANARY,
                "PRIMUS_RUNNER_ENV_LIT": "hello", "FOO": "the node's own, not the job's"}
    rebuilt, scope, missing = agent.plan_from_document(json.loads(text), node_env)
    assert missing == []
    assert rebuilt.job.public_env() == {"FOO": "foo-value", "LIT": "hello"}
    assert {k: v.reveal() for k, v in rebuilt.job.secret_env().items()} == {"HF_TOKEN": CANARY, "MY_API_KEY": FILE_CANARY}
    assert (rebuilt.container.image, rebuilt.job.command, rebuilt.job.gpu, rebuilt.container.labels) == (plan.container.image, plan.job.command, plan.job.gpu, plan.container.labels)
    assert scope.masker.mask(f"x {CANARY} y") == "x *** y"

    _, _, missing = agent.plan_from_document(json.loads(text), {"PRIMUS_RUNNER_ENV_FOO": "1", "HF_TOKEN": CANARY})
    assert set(missing) == {"HF_TOKEN", "MY_API_KEY", "LIT"}, "a name of its own on the node is not the job's value"


def test_dry_run_prints_no_value(work, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", CANARY)
    (work / ".env").write_text(f"MY_API_KEY={FILE_CANARY}\n")
    result = subprocess.run(
        [sys.executable, "-m", "runner", "submit", "--gpu", "none", "--nodes", "2", "--dry-run", "--", "sh", "-c", "echo hi"],
        capture_output=True, text=True, cwd=work, env={**__import__("os").environ, "HF_TOKEN": CANARY},
    )
    assert result.returncode == 0, result.stderr
    assert "#SBATCH --export=" in result.stdout and "HF_TOKEN" in result.stdout
    assert_no_value(result.stdout + result.stderr)
    assert not (work / "primus-runs").exists(), "--dry-run writes nothing"


def test_missing_required_secret_submits_nothing(slurm_project, work):
    (work / ".primus.yaml").write_text(slurm_project + "passthrough:\n  required: [HF_TOKEN]\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "HF_TOKEN"}
    result = subprocess.run([sys.executable, "-m", "runner", "submit", "--gpu", "none", "--", "true"], capture_output=True, text=True, cwd=work, env=env)
    assert result.returncode == 2 and "HF_TOKEN" in result.stderr
    assert not (work / "primus-runs").exists()


# --------------------------------------------------------------------------- cluster options
def _dry_run(work, capsys, *flags: str) -> tuple[int, str, str]:
    from runner import cli

    code = cli.main(["submit", "--gpu", "none", "--dry-run", *flags, "--", "sh", "-c", "echo hi"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


CLUSTER_FLAGS = [
    (["--nodelist", "n[1-2],gpu7"], "#SBATCH --nodelist=n[1-2],gpu7"),
    (["--exclude", "n3"], "#SBATCH --exclude=n3"),
    (["--qos", "high"], "#SBATCH --qos=high"),
    (["--reservation", "maint_1"], "#SBATCH --reservation=maint_1"),
    (["--exclusive"], "#SBATCH --exclusive"),
    (["--gres", "gpu:mi300x:8"], "#SBATCH --gres=gpu:mi300x:8"),
    (["--constraint", "a100&[rack1|rack2]"], "#SBATCH --constraint=a100&[rack1|rack2]"),
    (["--mem", "64G"], "#SBATCH --mem=64G"),
    (["--cpus-per-task", "16"], "#SBATCH --cpus-per-task=16"),
    (["--mail-type", "END,FAIL"], "#SBATCH --mail-type=END,FAIL"),
    (["--mail-user", "me@example.org"], "#SBATCH --mail-user=me@example.org"),
    (["--dependency", "afterok:1234:1235,singleton"], "#SBATCH --dependency=afterok:1234:1235,singleton"),
    (["--requeue"], "#SBATCH --requeue"),
    (["--signal", "B:USR1@90"], "#SBATCH --signal=B:USR1@90"),
]


@pytest.mark.parametrize("flags,directive", CLUSTER_FLAGS, ids=[f[0][0] for f in CLUSTER_FLAGS])
def test_cluster_flag_reaches_the_batch_script(slurm_project, work, capsys, flags, directive):
    (work / ".primus.yaml").write_text(slurm_project.replace('sbatch_args: ["--exclusive"]', "sbatch_args: []"))
    _, plain, _ = _dry_run(work, capsys)
    code, out, err = _dry_run(work, capsys, *flags)
    assert code == 0, err
    lines = out.splitlines()
    assert directive in lines, out
    directives = [line for line in lines if line.startswith("#SBATCH ")]
    # A directive sbatch reads: before the first command, one option per line.
    assert lines.index(directive) < lines.index(next(line for line in lines if line.startswith("srun ")))
    export = [line for line in directives if "--export" in line]
    assert export == [line for line in plain.splitlines() if line.startswith("#SBATCH --export")] and len(export) == 1, "the flag did not change what travels"
    assert [line for line in lines if line not in plain.splitlines() and "primus-" not in line] == [directive], "only its directive is new"
    assert subprocess.run(["bash", "-n"], input=out, text=True).returncode == 0


BAD_VALUES = [
    ("--nodelist", "n1 --export=ALL"), ("--nodelist", "n1\n#SBATCH --export=ALL"), ("--exclude", "--export=ALL"),
    ("--qos", "high,--export=ALL"), ("--qos", "a\nb"), ("--reservation", "r --get-user-env"), ("--gres", "gpu:1 --export=ALL"),
    ("--constraint", 'a"b'), ("--constraint", "a #b"), ("--mem", "1G --export=ALL"), ("--mem", "lots"),
    ("--mail-type", "END,--export=ALL"), ("--mail-type", "SOMETIMES"), ("--mail-user", "me@x --export=ALL"),
    ("--mail-user", "a=b"), ("--dependency", "afterok:1 --export=ALL"), ("--dependency", "afterok:1,--export=ALL"),
    ("--signal", "USR1 --export=ALL"), ("--signal", "B:USR1@90\n#SBATCH --export=ALL"), ("--cpus-per-task", "0"),
]


@pytest.mark.parametrize("flag,value", BAD_VALUES)
def test_a_cluster_flag_value_that_would_inject_is_exit_2(work, capsys, flag, value):
    code, out, err = _dry_run(work, capsys, f"{flag}={value}")
    assert code == 2, out + err
    assert "#SBATCH" not in out and not (work / "primus-runs").exists()
    assert flag in err


def test_cluster_flags_are_checked_before_a_tracker_run_or_sbatch(work, capsys):
    """The engine's typed settings validate them when built (the pipeline builds them right
    after the plan): a refused value creates no job directory and runs no sbatch."""
    from runner.engines.slurm import SlurmEngine
    from runner.engines.slurm.flags import SlurmFlags
    from runner.options import RunOptions

    with pytest.raises(ConfigError):
        SlurmEngine().settings(load_config(), RunOptions(command=("true",), engine_flags=(("slurm", SlurmFlags(qos="x --export=ALL")),)))


def test_node_scope_masks_the_password_of_a_forwarded_url_alone(work):
    """The entry as the planner makes it: a public variable holding a URL with a password travels
    as a secret (masked whole); the node must mask the password on its own too, or a job printing
    just the password puts it in slurm-%j.out (failed before: the agent took URL passwords only
    from entries marked public, and the planner never writes such an entry)."""
    from runner.engines.slurm.flags import SlurmFlags

    password = "url-pass-canary-41c9e07d"
    url = f"https://ci:{password}@tracker.internal/api"
    planned = plan_from(work, "container:\n  options:\n    image: busybox\n    env: [DB_URL]\n", host={"DB_URL": url},
                        flags=LaunchFlags(gpu="none"), name="j")
    settings = settings_from(load_config(), SlurmFlags())
    doc = slurm_script.plan_document(planned.require(), settings, Path("/x"))
    [entry] = [e for e in doc["plan"]["env"] if e["name"] == "DB_URL"]
    assert entry["secret"], "the planner carries it as a secret"
    plan, scope, missing = agent.plan_from_document(doc, {"PRIMUS_RUNNER_ENV_DB_URL": url})
    assert missing == []
    assert password not in scope.masker.mask(f"password is {password}")


def test_a_secret_inside_a_forwarded_value_reaches_the_node_masker_not_the_container(work):
    """AUTH_HEADER="Bearer $SERVICE_TOKEN" is forwarded, SERVICE_TOKEN is not: the token alone
    travels to the agents under an agent-only name, and the node masks it."""
    from runner.engines.base import RunContext
    from runner.engines.slurm import SlurmEngine
    from runner.options import RunOptions
    from runner.ui import Output

    token = "canary-embedded-token-3b8e1f06d2"
    host = {"SERVICE_TOKEN": token, "AUTH_HEADER": f"Bearer {token}"}
    planned = plan_from(work, "container:\n  options:\n    image: busybox\n    env: [AUTH_HEADER]\n", host=host,
                        flags=LaunchFlags(gpu="none"), name="j")
    plan, config = planned.require(), load_config()
    assert "SERVICE_TOKEN" not in {d.name for d in plan.job.forwarded}
    engine, options = SlurmEngine(), RunOptions(command=("true",))
    ctx = RunContext(options, planned.scope, Output(), engine.settings(config, options), lookup=host.get)
    request = engine.request(plan, ctx)
    agent_values = request.agent_values
    masks = [n for n in request.export if n.startswith(slurm_script.MASK_PREFIX)]
    assert masks and set(masks) <= set(agent_values)
    assert token not in request.script + " ".join(request.command())  # names only
    environ = {"PRIMUS_RUNNER_ENV_AUTH_HEADER": host["AUTH_HEADER"], **{n: agent_values[n].reveal() for n in masks}}
    doc = slurm_script.plan_document(plan, request.settings, Path("/x"))
    node_plan, scope, _ = agent.plan_from_document(doc, environ, extra_secrets=tuple(masks))
    assert token not in scope.masker.mask(f"the token is {token}")
    assert all(not n.startswith(slurm_script.MASK_PREFIX) for n in node_plan.job.secret_env())  # never the container's


# --------------------------------------------------------------------------- progress, back-off, ranked lines


def test_the_plan_file_is_in_the_request_with_all_the_node_does(work):
    """The plan file's text is part of the request (what the dry run shows is what is written), and it
    holds what the node agent used to add on its own: the stop timeout under KillWait, the node's job
    cache mounted, pull=missing after the agent's pull under the job's policy, the GPU device rule."""
    from dataclasses import replace as dc_replace
    from types import SimpleNamespace

    from runner.engines.base import RunContext
    from runner.engines.slurm import SlurmEngine
    from runner.options import RunOptions
    from runner.ui import Output

    planned = plan_from(work, "container:\n  gpu: rocm\n  stop_timeout: 30\n  pull: always\n  options:\n    image: busybox\n    env: [HF_TOKEN]\n",
                        host={"HF_TOKEN": CANARY}, flags=LaunchFlags(), name="j")
    engine, options = SlurmEngine(), RunOptions(command=("true",))
    settings = dc_replace(engine.settings(load_config(), options), cluster_config="KillWait                = 10 sec\n")
    run = SimpleNamespace(id="20261202-000000-abcdef", job_dir=work / "job", node_cache={"dir": str(work / "cache-{uid}"), "key": "k"})
    request = engine.request(planned.require(), RunContext(options, planned.scope, Output(), settings, run=run))
    doc = json.loads(request.plan_file)
    assert request.to_dict()["plan_file"] == request.plan_file and request.to_dict()["ids"] == {"run_id": run.id}
    assert doc["slurm"]["kill_wait"] == 10 and doc["plan"]["stop_timeout"] == 7.0
    assert doc["pull"] == "always" and doc["plan"]["pull"] == "missing"
    assert doc["devices"] == "allocation"
    assert doc["cache_dir"].startswith(str(work / "cache-")) and any(m["source"] == doc["cache_dir"] for m in doc["plan"]["mounts"])
    cache_names = {e["name"] for e in doc["plan"]["env"]} - {"HF_TOKEN"}
    assert cache_names and {f"PRIMUS_RUNNER_ENV_{n}" for n in cache_names} <= set(request.export), "their values travel with the job"
    assert_no_value(request.plan_file)
