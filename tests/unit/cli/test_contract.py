"""docs/cli-contract.md, sentence by sentence, against the real CLI (a subprocess, no engine needed).

Each test names the contract claim it proves. Engine-backed claims live in
tests/integration/container/test_contract_docker.py and test_contract_slurm.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run_cli, user_env
from pty_session import PtySession

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "primus-runner.primus.yaml"
CANARY = "canary-contract-5e1f0a9c77d2"
NO_DOCKER = "unix:///nonexistent/docker.sock"
PROJECT = "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n    env: [PLAIN, HF_TOKEN]\n"


def clean_env(cwd: Path, extra: dict | None = None, color: bool = False) -> dict:
    env = user_env(cwd, unset=("PLAIN",))
    if color:
        del env["NO_COLOR"]
    env.update(extra or {})
    return env


def run(cwd: Path, *args: str, env: dict | None = None, module: bool = True):
    if module:
        return run_cli(cwd, *args, env=env, unset=("PLAIN",), timeout=60)
    return subprocess.run(["primus-runner", *args], cwd=cwd, env=clean_env(cwd, env), capture_output=True, text=True, timeout=60)


def plan_json(cwd: Path, *args: str, env: dict | None = None) -> dict:
    result = run(cwd, "--json", "plan", *args, "--", "true", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def project(work):
    (work / ".primus.yaml").write_text(PROJECT)
    return work


# -- Install and entry points; global options -----------------------------------------------------

def test_python_m_runner_is_the_same_cli_as_the_console_script(project):
    for args in (["--version"], ["-h"], ["plan", "--help"]):
        module, script = run(project, *args), run(project, *args, module=False)
        assert module.returncode == script.returncode == 0, args
        assert module.stdout == script.stdout and module.stdout, args
    assert run(project, "--version").stdout.startswith("primus-runner ")
    assert "usage: primus-runner" in run(project, "--help").stdout


@pytest.mark.parametrize("late", [["--json"], ["--no-color"], ["--verbose"], ["--config", "x.yaml"], ["--env-file", "other.env"]])
def test_global_options_work_after_the_command_as_before_it(project, late):
    """The second round's contract: `primus-runner plan --json` = `primus-runner --json plan`."""
    (project / "x.yaml").write_text("container:\n  options:\n    env: [FROM_X]\n")
    (project / "other.env").write_text("FROM_X=1\n")
    (project / "other.env").chmod(0o600)
    before = run(project, *late, "plan", "--", "true")
    after = run(project, "plan", *late, "--", "true")
    assert before.returncode == after.returncode == 0, after.stderr
    # a fresh default name and run id (the run's label) per run
    mask_names = lambda text: re.sub(r"primus-[0-9a-f]{6}|\d{8}-\d{6}-[0-9a-f]{6}", "NAME", text)  # noqa: E731
    assert mask_names(after.stdout) == mask_names(before.stdout) and after.stdout


def test_env_file_defaults_to_dot_env_only_when_it_exists_and_the_process_env_wins(project):
    skipped = plan_json(project)["skipped"]
    assert {"name": "PLAIN", "reason": "unset"} in skipped and {"name": "HF_TOKEN", "reason": "unset"} in skipped
    (project / ".env").write_text(f"PLAIN=from-file\nHF_TOKEN={CANARY}\n")
    (project / ".env").chmod(0o600)
    data = plan_json(project)
    assert data["env"]["PLAIN"] == "from-file" and data["env"]["HF_TOKEN"] == "***"
    assert plan_json(project, env={"PLAIN": "from-env"})["env"]["PLAIN"] == "from-env"
    (project / "other.env").write_text("PLAIN=other\n")
    (project / "other.env").chmod(0o600)
    assert run(project, "--env-file", "other.env", "--json", "plan", "--", "true").returncode == 0
    assert json.loads(run(project, "--env-file", "other.env", "--json", "plan", "--", "true").stdout)["env"]["PLAIN"] == "other"
    missing = run(project, "--env-file", "nope.env", "plan", "--", "true")
    assert missing.returncode == 2 and "nope.env" in missing.stderr


# -- --json: exactly one document on stdout, the contract's keys and types ---------------------------

def test_plan_json_keys_and_types(project):
    (project / ".primus.yaml").write_text(PROJECT.replace("HF_TOKEN]", "HF_TOKEN, WANDB_API_KEY, UNSET_X]"))
    data = plan_json(project, "--env", "LIT=1", env={"PLAIN": "p", "HF_TOKEN": CANARY, "WANDB_API_KEY": CANARY, "PRIMUS_A_TOKEN": CANARY})
    assert isinstance(data["image"], str) and data["image"] == "primus-test/busybox:latest"
    assert data["command"] == ["true"]
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in data["env"].items())
    assert data["env"]["HF_TOKEN"] == data["env"]["WANDB_API_KEY"] == "***" and data["env"]["LIT"] == "1"
    assert sorted(data["secrets"]) == ["HF_TOKEN", "WANDB_API_KEY"]
    assert all(set(s) == {"name", "reason"} and all(isinstance(v, str) for v in s.values()) for s in data["skipped"])
    assert {"UNSET_X", "PRIMUS_A_TOKEN"} <= {s["name"] for s in data["skipped"]}
    assert CANARY not in json.dumps(data)


@pytest.mark.parametrize("args, code", [
    (["plan", "--", "true"], 0),
    (["up", "--dry-run", "--", "true"], 0),
    (["check"], 1),  # no engine answers
    (["--config", "bad.yaml", "check"], 2),  # a device this host lacks
    (["build", "--dry-run"], 0),
])
def test_json_stdout_is_one_document_even_with_notices(project, args, code):
    (project / "bad.yaml").write_text("container:\n  options:\n    devices: [/dev/x]\n")
    # unset allowlisted names and a missing engine: notices and warnings must all go to stderr
    result = run(project, "--json", *args, env={"DOCKER_HOST": NO_DOCKER})
    assert result.returncode == code, result.stderr
    json.loads(result.stdout)  # exactly one JSON document, nothing else (notices went to stderr)
    assert "Traceback" not in result.stderr


def test_check_json_shape_and_exit_codes(project):
    unreachable = run(project, "--json", "check", env={"DOCKER_HOST": NO_DOCKER})
    assert unreachable.returncode == 1, "engine unreachable alone: exit 1"
    data = json.loads(unreachable.stdout)
    assert data["ok"] is False and data["problems"] == []
    (project / "bad.yaml").write_text("container:\n  options:\n    env: [HF_TOKEN=x]\npassthrough:\n  required: [NEEDED_X]\n")
    both = run(project, "--json", "--config", "bad.yaml", "check", env={"DOCKER_HOST": NO_DOCKER})
    assert both.returncode == 2, "problems and an unreachable engine: 2 wins"
    data = json.loads(both.stdout)
    assert data["ok"] is False and isinstance(data["problems"], list) and len(data["problems"]) == 2
    for problem in data["problems"]:
        assert {"message", "where"} <= set(problem)
        assert isinstance(problem["message"], str) and (problem["where"] is None or isinstance(problem["where"], str))
    wheres = {p["where"] for p in data["problems"]}
    assert "bad.yaml:3" in wheres and None in wheres  # a literal secret has a line; a missing name has none
    assert any("NEEDED_X" in p["message"] for p in data["problems"])


# -- colour ------------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["default", "--no-color", "NO_COLOR"])
def test_colour_on_a_terminal_unless_asked_off(project, how):
    env = clean_env(project, color=how != "NO_COLOR")
    argv = [sys.executable, "-m", "runner", *(["--no-color"] if how == "--no-color" else []), "up", "--dry-run", "--", "true"]
    with PtySession(argv, project, env, timeout=60) as session:
        code = session.finish()
    output = bytes(session.transcript)
    assert code == 0, output
    assert b"primus-test/busybox:latest" in output
    if how == "default":
        assert b"\x1b[" in output, "a terminal gets colour when nobody asked it off"
    else:
        assert b"\x1b[" not in output, f"{how}: no ANSI escape anywhere"


# -- config layers ---------------------------------------------------------------------------------

def test_layers_deep_merge_with_cumulative_unions_through_the_cli(work):
    (work / ".primus.yaml").write_text(
        "container:\n  gpu: rocm\n  options:\n    image: project/img\n    ipc: private\n"
        "    device: [/dev/kfd, /dev/null]\n    cap-add: [SYS_PTRACE, NET_ADMIN]\n    volume: [/tmp:/x]\n    env: [MASTER_ADDR, EXTRA_A]\n")
    home = work / "h"  # ~/.primus.yaml, the layer below the project file
    home.mkdir()
    (home / ".primus.yaml").write_text("container:\n  options:\n    image: home/img\n    network: bridge\n    env: [HOME_ONLY]\n")
    (work / "extra.yaml").write_text("container:\n  options:\n    volume: [/tmp:/x, /var:/y]\n    env: [EXTRA_A, EXTRA_B]\n")
    result = run(work, "--config", "extra.yaml", "--json", "plan", "--image", "flag/img", "--volume", "/opt:/z",
                 "--device", "/dev/zero", "--", "true", env={"HOME": str(home)})
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["image"] == "flag/img", "flags are the top layer"
    assert data["network"] == "bridge" and data["ipc"] == "private", "maps merge key by key across home and project"
    assert data["devices"][:2] == ["/dev/kfd", "/dev/dri"] and data["devices"].count("/dev/kfd") == 1
    assert {"/dev/null", "/dev/zero"} <= set(data["devices"])
    assert data["cap_add"] == ["SYS_PTRACE", "CAP_SYS_ADMIN", "NET_ADMIN"]
    assert [m["target"] for m in data["mounts"] if not m["target"].startswith("/primus-runner/")] == ["/x", "/y", "/z"]
    names = [s["name"] for s in data["skipped"]]
    assert len(names) == len(set(names))
    assert {"MASTER_ADDR", "HF_TOKEN", "WANDB_API_KEY", "HOME_ONLY", "EXTRA_A", "EXTRA_B"} <= set(names)


def test_project_file_that_only_sets_image_keeps_every_default(work):
    defaults = plan_json(work)
    (work / ".primus.yaml").write_text("container:\n  options:\n    image: only/image:1\n")
    data = plan_json(work)
    assert data["image"] == "only/image:1"
    for key in ("devices", "cap_add", "group_add", "security_opt", "ipc", "network", "gpu", "skipped"):
        assert data[key] == defaults[key], key


def test_launcher_file_means_the_same(work):
    (work / ".primus.yaml").write_text(FIXTURE.read_text())
    data = plan_json(work)
    assert data["image"] == "rocm/primus:v26.5" and re.fullmatch(r"primus-training-\d+", data["name"])  # per-job suffix, as the launcher
    assert data["privileged"] is True and data["ulimits"] == ["nofile=1048576:1048576"]
    assert data["ipc"] == data["network"] == "host"
    assert data["security_opt"] == ["seccomp=unconfined"] and data["group_add"] == ["video"]
    assert data["cap_add"] == ["SYS_PTRACE", "CAP_SYS_ADMIN"] and data["devices"][:2] == ["/dev/kfd", "/dev/dri"]
    script = run(work, "submit", "--dry-run", "--", "true")
    assert script.returncode == 0, script.stderr
    for line in ("#SBATCH --job-name=primus-training", "#SBATCH --nodes=1", "#SBATCH --time=4:00:00", "#SBATCH --gpus-per-node=8"):
        assert line in script.stdout
    assert not (work / "primus-runs").exists(), "--dry-run writes nothing"
    (work / "flags.yaml").write_text('slurm:\n  nodes: 2\n  partition: debug\n  time: "0:10:00"\n')
    script = run(work, "--config", "flags.yaml", "submit", "--dry-run", "--nodes", "3", "--", "true").stdout
    assert "#SBATCH --nodes=3" in script and "#SBATCH --partition=debug" in script and "#SBATCH --time=0:10:00" in script


# -- env passthrough rules -------------------------------------------------------------------------

DEFAULT_SECRETS = ["WANDB_API_KEY", "HF_TOKEN", "DATABRICKS_TOKEN", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"]


def test_default_secret_names_and_patterns_are_secrets(project):
    pattern_names = ["PRIMUS_X_TOKEN", "NCCL_X_API_KEY", "PRIMUS_DB_SECRET", "PRIMUS_SECRETS", "PRIMUS_CLIENT_SECRETKEY", "RCCL_X_PASSWORD"]
    listed = ", ".join(DEFAULT_SECRETS + pattern_names)
    (project / ".primus.yaml").write_text(PROJECT.replace("[PLAIN, HF_TOKEN]", f"[{listed}]"))
    data = plan_json(project, env={name: CANARY for name in DEFAULT_SECRETS + pattern_names})
    assert sorted(data["secrets"]) == sorted(DEFAULT_SECRETS + pattern_names)
    assert all(data["env"][name] == "***" for name in DEFAULT_SECRETS + pattern_names)
    for name in DEFAULT_SECRETS + pattern_names:
        (project / "lit.yaml").write_text(f"container:\n  options:\n    env:\n      - {name}=x\n")
        refused = run(project, "--config", "lit.yaml", "plan", "--", "true")
        assert refused.returncode == 2 and "lit.yaml:4" in refused.stderr and name in refused.stderr


def test_prefix_rules_never_forward_a_secret_pattern_name(project):
    env = {"PRIMUS_DB_SECRETS": CANARY, "PRIMUS_SECRETKEY": CANARY, "NCCL_A_TOKEN": CANARY, "GLOO_PASSWORD_X": "plain", "NCCL_DEBUG": "INFO"}
    result = run(project, "--json", "plan", "--", "true", env=env)
    data = json.loads(result.stdout)
    assert data["env"].get("NCCL_DEBUG") == "INFO"
    skipped = {s["name"]: s["reason"] for s in data["skipped"]}
    for name in ("PRIMUS_DB_SECRETS", "PRIMUS_SECRETKEY", "NCCL_A_TOKEN"):
        assert name not in data["env"] and "secret" in skipped[name], name
    assert CANARY not in result.stdout + result.stderr


@pytest.mark.parametrize("name", ["LD_PRELOAD", "LD_LIBRARY_PATH", "SSH_AUTH_SOCK", "DOCKER_HOST", "HOME", "PATH"])
def test_listing_a_denied_name_is_a_config_error(project, name):
    (project / "deny.yaml").write_text(f"container:\n  options:\n    env: [{name}]\n")
    result = run(project, "--config", "deny.yaml", "plan", "--", "true")
    assert result.returncode == 2 and name in result.stderr and "deny.yaml:3" in result.stderr
    flag = run(project, "plan", "--env", name, "--", "true")
    assert flag.returncode == 2 and name in flag.stderr
    # never forwarded by a prefix either
    (project / "pfx.yaml").write_text(f"passthrough:\n  prefixes: [{name[:3]}]\n")
    data = json.loads(run(project, "--config", "pfx.yaml", "--json", "plan", "--", "true", env={name: "v"}).stdout)
    assert name not in data["env"]


def test_secret_literal_on_the_command_line_is_refused(project):
    result = run(project, "plan", "--env", f"HF_TOKEN={CANARY}", "--", "true")
    assert result.returncode == 2 and "HF_TOKEN" in result.stderr
    assert "on the command line" in result.stderr and "--env HF_TOKEN " in result.stderr  # the fix, for a flag
    assert CANARY not in result.stdout + result.stderr


def test_required_names_from_passthrough_and_trackers_in_one_message(project):
    (project / "req.yaml").write_text(
        "passthrough:\n  required: [NEEDED_A, NEEDED_B]\ntrackers:\n  disable_wandb: false\n  disable_mlflow: false\n")
    for command in (["plan", "--", "true"], ["up", "--", "true"], ["submit", "--dry-run", "--", "true"]):
        result = run(project, "--config", "req.yaml", *command, env={"DOCKER_HOST": NO_DOCKER})
        assert result.returncode == 2, command
        lines = [line for line in result.stderr.splitlines() if "NEEDED_A" in line]
        assert len(lines) == 1, result.stderr
        assert all(n in lines[0] for n in ("NEEDED_A", "NEEDED_B", "WANDB_API_KEY", "MLFLOW_TRACKING_URI")), lines[0]


def test_unset_allowlisted_name_is_reported_in_check_and_plan(project):
    data = plan_json(project)
    assert {"name": "PLAIN", "reason": "unset"} in data["skipped"]
    human = run(project, "--verbose", "plan", "--", "true")
    assert "PLAIN   (allowlist: unset)" in human.stdout and "PLAIN" not in human.stderr  # once, in the plan itself
    launch = run(project, "up", "--", "true", env={"DOCKER_HOST": NO_DOCKER})  # the notice comes before the engine is asked
    notices = [line for line in launch.stderr.splitlines() if "PLAIN" in line]
    assert len(notices) == 1 and notices[0].startswith("notice:")
    check = json.loads(run(project, "--json", "check", env={"DOCKER_HOST": NO_DOCKER}).stdout)
    assert any("PLAIN" in w for w in check["warnings"])


# -- LAUNCH options ------------------------------------------------------------------------------

LAUNCH = ["--image", "other/img:2", "--env", "FROM_HOST", "--env", "LIT_A=1", "--env", "LIT_B=two words",
          "--volume", "/tmp:/a", "--volume", "/var:/b:ro", "--device", "/dev/null", "--device", "/dev/zero",
          "--gpu", "none", "--name", "contract-job", "--workdir", "/w", "--shm-size", "1g", "--memory", "2g",
          "--cpus", "1.5", "--network", "bridge", "--ipc", "private", "--user", "1000:1000"]


@pytest.mark.parametrize("command", [["plan"], ["up", "--dry-run"]])
def test_every_launch_option_reaches_the_plan(project, command):
    result = run(project, "--json", *command, *LAUNCH, "--", "true", env={"FROM_HOST": "h"})
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["image"] == "other/img:2" and data["gpu"] == "none" and data["name"] == "contract-job"
    assert data["env"]["FROM_HOST"] == "h" and data["env"]["LIT_A"] == "1" and data["env"]["LIT_B"] == "two words"
    # up --dry-run shows what up would send: the job cache mount under /primus-runner/ too
    assert [(m["source"], m["target"], m["mode"]) for m in data["mounts"] if not m["target"].startswith("/primus-runner/")] == \
        [("/tmp", "/a", "rw"), ("/var", "/b", "ro")]
    assert data["devices"] == ["/dev/null", "/dev/zero"]
    assert (data["workdir"], data["shm_size"], data["memory"], data["network"], data["ipc"], data["user"]) == \
        ("/w", "1g", "2g", "bridge", "private", "1000:1000")
    assert float(data["cpus"]) == 1.5


def test_submit_accepts_every_launch_option(project):
    result = run(project, "submit", "--dry-run", *LAUNCH, "--", "true", env={"FROM_HOST": "h"})
    assert result.returncode == 0, result.stderr
    assert "#SBATCH --job-name=contract-job" in result.stdout
    srun = next(line for line in result.stdout.splitlines() if line.startswith("srun "))
    assert {"PRIMUS_RUNNER_ENV_FROM_HOST", "PRIMUS_RUNNER_ENV_LIT_A", "PRIMUS_RUNNER_ENV_LIT_B"} <= set(srun.split("--export=", 1)[1].split()[0].split(","))


# -- exit codes and errors -------------------------------------------------------------------------

@pytest.mark.parametrize("args, code", [
    (["completion", "bash"], 0), (["completion", "zsh"], 0), (["completion", "fish"], 0),
    (["completion", "tcsh"], 2),
    (["build", "--dry-run"], 0), (["build", "--flavor", "tpu"], 2), (["build", "--dry-run", "--build-arg", "NOEQUALS"], 2),
    (["up", "--gpu", "none", "--", "true"], 1),  # no daemon: 1
    (["ps"], 1), (["logs", "x"], 1), (["down", "x"], 1),
    (["status", "not-a-number"], 2), (["cancel", "not-a-number"], 2),
    (["audit", "."], 0),
])
def test_exit_codes(project, args, code):
    result = run(project, *args, env={"DOCKER_HOST": NO_DOCKER})
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [
    ["plan", "--gpu", "tpu", "--", "x"], ["plan"], ["nonsense"], ["plan", "--cpus"],
    ["--config", "missing.yaml", "plan", "--", "x"], ["plan", "--env", "1BAD=x", "--", "x"],
    ["plan", "--volume", ":::", "--", "x"], ["submit", "--nodes", "zero", "--", "x"], ["submit", "--dry-run", "--nodes", "0", "--", "x"],
    ["audit", "/nonexistent/path"], ["--env-file", "/nonexistent", "plan", "--", "x"],
])
def test_user_errors_never_show_a_traceback(project, args):
    result = run(project, *args, env={"DOCKER_HOST": NO_DOCKER})
    assert result.returncode == 2, (args, result.returncode, result.stderr)  # each is the user's input: a usage or config error
    assert "Traceback" not in result.stderr and "error" in result.stderr.lower()


def test_missing_slurm_tools_exit_1(project, tmp_path):
    bin_dir = tmp_path / "bin"  # a PATH with docker but no Slurm client tools
    bin_dir.mkdir()
    env = {"PATH": str(bin_dir), "DOCKER_HOST": NO_DOCKER}
    for args in (["submit", "--", "true"], ["status", "1"], ["cancel", "1"], ["check", "--engine", "slurm"]):
        result = run(project, *args, env=env)
        assert result.returncode == 1, (args, result.stderr)
        assert "not found" in result.stderr and "Traceback" not in result.stderr
    assert run(project, "submit", "--dry-run", "--", "true", env=env).returncode == 0, "--dry-run needs no Slurm"
