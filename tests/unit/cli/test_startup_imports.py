"""What `plan` and the Slurm node agent load to start, counted from the interpreter's own import
log (`python -X importtime`) in a fresh process: module imports are most of their start-up, so
each stays off what it does not use (no wall-clock figure is asserted, only which modules load)."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# A launch's, not a plan's: the tracker clients and their HTTP stack, the run store, the
# submit side of Slurm, third-party SDKs; the Engine API's HTTP client (nothing this request
# shows needs the engine's answer: the socket that answers names the engine). The tracker
# modules themselves load (a plan reads each one's declared settings); what they talk with
# (urllib.request, http.client, ssl, the mlflow client, MLflow's store modules) loads only when they talk.
NOT_IN_PLAN = (
    "http.client", "ssl", "email.parser", "runner.clients.engine_api.transport",
    "runner.clients.engine_api.negotiation", "runner.clients.engine_api.api",
    "docker", "rich", "mlflow", "wandb", "boto3", "sqlite3", "urllib.request", "concurrent.futures",
    "runner.trackers.handshake", "runner.runs.store",
    "runner.trackers.mlflow.stores", "runner.trackers.mlflow.client", "runner.trackers.mlflow.filestore", "runner.trackers.mlflow.artifacts",
    "runner.engines.slurm.engine", "runner.engines.docker.run",
    "runner.engines.slurm.submit", "runner.engines.slurm.job_wait", "runner.engines.slurm.job_output",
    "runner.engines.slurm.job_state", "runner.engines.slurm.job_cancel", "runner.engines.slurm.controller",
    "runner.engines.slurm.job_directory",
    # The user's slurm: section is checked by its settings alone: not the batch script, the plan file or the node side;
    # the run store's writer thread is a launch's, and so is W&B's HTTP stack.
    "runner.engines.slurm.script", "runner.engines.slurm.node", "runner.runs.writer", "queue", "runner.trackers.httpapi",
    # A plan reads the trackers' declared settings (each tracker's SETTINGS), not their clients,
    # and what only those clients use: logging, subprocess (git), getpass, configparser (uuid loads with
    # jsonschema, which every plan imports now: nothing of a validation is kept).
    "runner.trackers.mlflow.handshake", "runner.trackers.mlflow.preload", "runner.trackers.mlflow.online",
    "runner.trackers.mlflow.endpoint", "runner.git",
    "logging", "subprocess", "getpass", "configparser",
    # The launcher modes' parser (`container`, `direct`, `slurm` only), a did-you-mean's difflib, glob.
    "runner.cli.launcher_args", "difflib", "glob",
    # A run id's random part is os.urandom (secrets brings hmac and random).
    "secrets", "hmac",
)
# How many of the runner's own modules each may load at most: a guard against what the lists above do
# not name (75 and 42 loaded when it was last counted, plus a little room; the agent's 42 through the CLI,
# fewer through its own entry).
PLAN_RUNNER_MODULES = 77
AGENT_RUNNER_MODULES = 43
# The node agent's: none of the submit side (sbatch, squeue, the batch script, the log followers),
# no config files (the plan file is the config), no tracker client.
NOT_IN_AGENT = (
    "runner.engines.slurm.engine", "runner.engines.slurm.script", "yaml", "jsonschema",
    "runner.engines.slurm.submit", "runner.engines.slurm.job_wait", "runner.engines.slurm.job_output",
    "runner.engines.slurm.job_state", "runner.engines.slurm.job_cancel", "runner.engines.slurm.controller",
    "runner.engines.slurm.job_directory",
    "runner.trackers.handshake", "runner.trackers.mlflow", "runner.runs.store", "sqlite3",
    "urllib.request", "concurrent.futures", "docker",
    # a direct or container entry is not a launcher mode; nor a docker engine on a direct entry
    "runner.cli.launcher_args", "runner.engines.docker", "difflib", "glob", "logging", "uuid",
    # planning: the plan file is a plan already (runner.launch_plan rebuilds it)
    "runner.plan", "runner.config.container_values",
)


# `-X importtime` logs no module that `importlib.import_module` loads (the tracker registry's
# way), so the names are also read from `sys.modules` at exit, through this driver.
_DRIVER = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: sys.stderr.write('modules: ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
    "how, target = sys.argv.pop(1), sys.argv.pop(1)\n"
    "sys.argv = [target, *sys.argv[1:]]\n"
    "if how == '-m':\n"
    "    runpy.run_module(target, run_name='__main__', alter_sys=True)\n"
    "else:\n"
    "    runpy.run_path(target, run_name='__main__')\n"
)


def runner_modules(names: set[str]) -> list[str]:
    return sorted(n for n in names if n == "runner" or n.startswith("runner."))


def imported(args: list[str], cwd: Path, env: dict) -> tuple[subprocess.CompletedProcess, set[str]]:
    # Interpreter flags (-P, -S) stay before the driver, which runs the module (-m NAME) or the file.
    at = args.index("-m") if "-m" in args else next(i for i, a in enumerate(args) if not a.startswith("-"))
    how, target = ("-m", args[at + 1]) if args[at] == "-m" else ("file", args[at])
    rest = args[at + (2 if how == "-m" else 1):]
    done = subprocess.run([sys.executable, "-X", "importtime", *args[:at], "-c", _DRIVER, how, target, *rest], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.splitlines()
    names = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    names |= {name for line in lines if line.startswith("modules: ") for name in line.split()[1:]}
    return done, names


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "SLURM_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "cache"), XDG_STATE_HOME=str(home / "state"), NO_COLOR="1")
    return env


def test_plan_on_the_repository_config_loads_no_launch_module(tmp_path):
    (tmp_path / ".primus.yaml").write_text((REPO / ".primus.yaml").read_text())
    env = _env(tmp_path)
    args = ["-m", "runner", "plan", "--", "true"]
    done, names = imported(args, tmp_path, env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "runner.plan" in names and "runner.engines.docker" in names  # the log is read (the check is not vacuous)
    assert sorted(n for n in NOT_IN_PLAN if n in names) == []
    assert len(runner_modules(names)) <= PLAN_RUNNER_MODULES, runner_modules(names)


def _plan_file(work: Path) -> str:
    """A real plan file, written by the submit side as `submit` writes it (here, in the test's
    process); the job runs `true` as a host process (direct entry), so no engine is needed."""
    from runner.config import load_config
    from runner.config.envfile import EnvFile
    from runner.engines.slurm import script
    from runner.engines.slurm.flags import SlurmFlags
    from runner.engines.slurm.settings import settings_from
    from runner.plan import LaunchFlags, build_plan

    (work / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n")
    config = load_config(project_dir=work, user_files=False)
    per_node = [(n, "(per node)") for n in script.COMPUTED]
    plan = build_plan(config, ["true"], {}, EnvFile(None), LaunchFlags(gpu="none"), extra_env=per_node).require()
    settings = settings_from(config, SlurmFlags(entry="direct"))
    text = json.dumps(script.plan_document(plan, settings, work), indent=2)
    (work / "plan.json").write_text(text)
    return hashlib.sha256(text.encode()).hexdigest()  # what the batch script hands every node


@pytest.mark.parametrize("how", ["srun", "cli"])
def test_the_node_agent_loads_none_of_the_submit_side(tmp_path, how):
    """As the batch script starts it on every node (``agent_command``: its own entry, no command-line
    parser, no ``site``), and as ``primus-runner node-agent`` (the CLI's parser for that one command)."""
    from runner.engines.slurm.script import agent_command

    digest = _plan_file(tmp_path)
    env = _env(tmp_path)
    env.update(SLURM_JOB_ID="4242", SLURM_NODEID="0", PRIMUS_RUNNER_PLAN_SHA256=digest, PRIMUS_MASTER_NODEADDR="127.0.0.1")
    command = agent_command()[1:] if how == "srun" else ["-P", "-m", "runner"]
    done, names = imported([*command, "node-agent", str(tmp_path / "plan.json")], tmp_path, env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "exit-4242-0").read_text() == "0\n"  # it ran the job
    assert "runner.engines.slurm.agent" in names and "runner.launch_plan" in names
    assert sorted(n for n in NOT_IN_AGENT if n in names) == []
    if how == "srun":  # the per-node start-up: no site, no parser, no CLI, no registry client for an image already there
        assert "site" not in names and command[0] == "-S"
        assert sorted(n for n in ("argparse", "runner.cli", "runner.context", "runner.clients.registry", "runner.config.envfile") if n in names) == []
    assert len(runner_modules(names)) <= AGENT_RUNNER_MODULES, runner_modules(names)


def _commands_built(argv: list[str]) -> list[str]:
    from runner.cli.parser import build_parser, scout

    parser = build_parser(scout(argv))
    return next(list(a.choices) for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")


def test_a_run_builds_the_parser_of_its_command_alone():
    """Each command's parser costs start-up; a run parses one command."""
    from runner.cli.parser import COMMANDS

    assert _commands_built(["plan", "--", "true"]) == ["plan"]
    assert _commands_built(["--json", "up", "--gpu", "none", "--", "python", "--help"]) == ["up"]  # a job's --help is the job's
    # the top level's help, an unknown command's did-you-mean and no command at all list every command
    for argv in (["--help", "plan"], ["-h"], ["plna"], []):
        assert _commands_built(argv) == list(COMMANDS), argv


def test_the_top_level_help_before_a_command_lists_every_command(cli):
    from runner.cli.suggest import visible_commands
    from runner.cli.parser import build_parser

    rc, out, err = cli("--help", "plan")
    assert rc == 0, err
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("    ") and line.split()]
    assert [name for name in visible_commands(build_parser()) if name not in listed] == []
