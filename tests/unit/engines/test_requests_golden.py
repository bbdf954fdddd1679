"""Each engine's request builder against a golden request: the Docker create body and its
`docker run` argv, the same for Podman, Slurm's sbatch argv and batch script, the process argv.

A plan with fixed inputs (name, image, env, limits) and a fixed run id goes through each engine's
`request`; the run label is that id, and paths that depend on the machine are normalised.
What the engines really receive is compared with the dry run in
tests/integration/container/test_requests_received.py.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from plan_factory import plan_from_layer

from runner.engines.base import RunContext, RunPlacement
from runner.engines.slurm.flags import SlurmFlags
from runner.options import LaunchFlags, RunOptions
from runner.ui import Output

CANARY = "golden-canary-secret-4f1d9a"
LAYER = {"container": {"gpu": "none", "stop_timeout": 5, "options": {
    "image": "primus-test/busybox:latest", "privileged": False, "ulimit": ["nofile=1024:2048"], "group-add": [],
    "cap-add": ["SYS_PTRACE"], "security-opt": [], "ipc": "host", "network": "host", "shm-size": "1g", "memory": "2g",
    "cpus": 1.5, "env": ["HF_TOKEN", "LIT=one"], "workdir": "/w"}}}


def _plan(work, secrets_via="stdin"):
    layer = {**LAYER, "container": {**LAYER["container"], "secrets_via": secrets_via}}
    config, planned = plan_from_layer(layer, ["python", "train.py", "--lr", "0.1"], host={"HF_TOKEN": CANARY, "PATH": "/usr/bin"},
                                      flags=LaunchFlags(name="golden-job"))
    return config, planned.require(), planned.scope


RUN_ID = "20261202-140000-abcdef"


def _ctx(engine, config, scope, **options):
    opts = RunOptions(command=("x",), **options)
    return RunContext(opts, scope, Output(), engine.settings(config, opts), run=RunPlacement(RUN_ID))


def _body(request) -> dict:
    assert request.config["Labels"]["io.primus-runner.run"] == RUN_ID  # the run's id, not a label of its own
    return {**request.config, "Labels": {k: v for k, v in request.config["Labels"].items() if k != "io.primus-runner.run"}}


GOLDEN_BODY = {
    "Image": "primus-test/busybox:latest",
    "Cmd": ["python", "train.py", "--lr", "0.1"],
    "Env": ["LIT=one"],
    "Labels": {"io.primus-runner.managed": "true", "io.primus-runner.job": "golden-job", "io.primus-runner.version": "0.1.0",
               "io.primus-runner.owner": str(os.getuid())},
    "AttachStdin": True, "OpenStdin": True, "StdinOnce": True, "AttachStdout": True, "AttachStderr": True, "Tty": False,
    "StopTimeout": 5,
    "HostConfig": {"Init": True, "Privileged": False, "CapAdd": ["SYS_PTRACE", "CAP_SYS_ADMIN"],  # cap-add: a union with the defaults
                   "Ulimits": [{"Name": "nofile", "Soft": 1024, "Hard": 2048}], "IpcMode": "host", "NetworkMode": "host",
                   "LogConfig": {"Type": "none", "Config": {}}, "ShmSize": 1 << 30, "Memory": 2 << 30, "NanoCpus": 1_500_000_000},
    "WorkingDir": "/w",
}


def _argv_golden(kind: str) -> list[str]:
    return [kind, "run", "--name", "golden-job", "--rm", "--interactive",
            "--label", "io.primus-runner.managed=true", "--label", "io.primus-runner.job=golden-job",
            "--label", "io.primus-runner.version=0.1.0", "--label", f"io.primus-runner.owner={os.getuid()}", "--label", "RUN",
            "-e", "LIT=one", "-e", "HF_TOKEN", "--init", "--cap-add", "SYS_PTRACE", "--cap-add", "CAP_SYS_ADMIN", "--ulimit", "nofile=1024:2048",
            "--ipc", "host", "--network", "host", "--shm-size", "1g", "--memory", "2g", "--cpus", "1.5",
            "--log-driver", "none", "--workdir", "/w", "--stop-timeout", "5", "--entrypoint", "/bin/sh",
            "primus-test/busybox:latest", "-c", "<stdin-shim>", "primus-shim", "<image-entrypoint>",
            "python", "train.py", "--lr", "0.1"]


def _normal(argv: list[str]) -> list[str]:
    return ["RUN" if a == f"io.primus-runner.run={RUN_ID}" else a for a in argv]


@pytest.mark.parametrize("kind", ["docker", "podman"])
def test_docker_and_podman_requests_are_the_golden_ones(work, kind):
    from runner.engines.docker import DockerEngine
    from runner.engines.docker.shim import shim_entrypoint

    config, plan, scope = _plan(work)
    config.data["container"]["engine"] = kind
    engine = DockerEngine()
    request = engine.request(plan, _ctx(engine, config, scope))
    assert _body(request) == {**GOLDEN_BODY, "Entrypoint": shim_entrypoint()}
    assert request.pending == ("image entrypoint",) and request.kind == kind
    assert _normal(request.argv()) == _argv_golden(kind)
    assert CANARY not in repr(request.to_dict()) + request.render()


def test_the_resolve_step_records_the_image_entrypoint_in_a_new_request(work):
    """The image's entrypoint goes into a new request through the named step, never into the old one.
    That the launch then adds nothing is tests/integration/container/test_requests_received.py's:
    it launches, and compares what the engine received with the dry run."""
    from runner.engines.docker import DockerEngine
    from runner.engines.docker.request import resolve
    from runner.engines.docker.shim import shim_entrypoint

    config, plan, scope = _plan(work)
    engine = DockerEngine()
    request = engine.request(plan, _ctx(engine, config, scope))
    final = resolve(request, None, {"Config": {"Entrypoint": ["/entry.sh", "--x"]}})
    assert final.config["Entrypoint"] == shim_entrypoint() + ["/entry.sh", "--x"] and final.pending == ()
    assert request.config["Entrypoint"] == shim_entrypoint()  # the first request is unchanged
    assert final.argv()[-7:] == ["primus-shim", "/entry.sh", "--x", "python", "train.py", "--lr", "0.1"]
    assert any("/entry.sh" in d for d in final.decisions)


def test_secrets_via_env_renders_names_only(work):
    from runner.engines.docker import DockerEngine

    config, plan, scope = _plan(work, secrets_via="env")
    engine = DockerEngine()
    request = engine.request(plan, _ctx(engine, config, scope))
    assert f"HF_TOKEN={CANARY}" in request.config["Env"]  # the explicit choice: the value is in Env
    argv = request.argv()
    assert "HF_TOKEN" in argv and CANARY not in " ".join(argv) and CANARY not in request.render()
    assert "--entrypoint" not in argv and argv[-5:] == ["primus-test/busybox:latest", "python", "train.py", "--lr", "0.1"]


def test_run_ids_are_given_to_the_request_by_name(work):
    from runner.engines.docker import DockerEngine

    config, plan, scope = _plan(work)
    engine = DockerEngine()
    request = engine.request(plan, _ctx(engine, config, scope))
    with_ids = request.with_run_env({"MLFLOW_RUN_ID": "abc", "LIT": "two"})
    assert sorted(with_ids.config["Env"]) == ["LIT=two", "MLFLOW_RUN_ID=abc"]
    assert {k: v for k, v in with_ids.config.items() if k != "Env"} == {k: v for k, v in request.config.items() if k != "Env"}
    assert request.config["Env"] == ["LIT=one"]  # the request it came from is unchanged
    assert with_ids.plan.job.public_env()["MLFLOW_RUN_ID"] == "abc"


def test_a_bad_value_is_refused_when_the_request_is_built(work):
    """Typed builders: a plan that skipped validation still cannot reach the engine with a bad ulimit."""
    from dataclasses import replace

    from runner.engines.docker import DockerEngine
    from runner.errors import ConfigError

    config, plan, scope = _plan(work)
    engine = DockerEngine()
    with pytest.raises(ConfigError, match="nofile=lots"):
        engine.request(replace(plan, container=replace(plan.container, ulimits=("nofile=lots",))), _ctx(engine, config, scope))


def test_slurm_request_is_the_golden_one(work):
    from runner.engines.slurm import SlurmEngine
    from runner.engines.slurm.script import agent_command

    config, plan, scope = _plan(work)
    engine = SlurmEngine()
    ctx = _ctx(engine, config, scope, engine_flags=(("slurm", SlurmFlags(nodes=2, partition="debug", time="1:00:00", qos="high")),))
    request = engine.request(plan, ctx)
    job_dir = str(request.job_dir)
    assert job_dir.startswith(str(work / "primus-runs")) and job_dir.endswith("-golden-job") and not request.job_dir.exists()
    assert request.command() == ["sbatch", "--parsable", "--export=PATH", "--export-file=/dev/stdin", f"{job_dir}/job.sbatch"]
    agent = " ".join(agent_command())
    head = request.script.split("\n\n")[0].splitlines()
    assert head == [
        "#!/bin/bash",
        "# primus-runner 0.1.0: batch script for golden-job. It holds variable NAMES only;",
        "# Slurm gives the job their values from sbatch's stdin, each job variable as PRIMUS_RUNNER_ENV_<NAME>.",
        "#SBATCH --job-name=golden-job",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --output={job_dir}/slurm-%j.out",
        "#SBATCH --open-mode=append",
        f"#SBATCH --chdir={work}",
        "#SBATCH --time=1:00:00",
        "#SBATCH --partition=debug",
        "#SBATCH --qos=high",
        "#SBATCH --export=PATH",
    ]
    assert (f"srun --nodes=2 --ntasks-per-node=1 --kill-on-bad-exit=1 --label --export=PRIMUS_RUNNER_ENV_HF_TOKEN,PRIMUS_RUNNER_ENV_LIT,PATH,"
            f"PRIMUS_RUNNER_PLAN_SHA256,PRIMUS_MASTER_NODEADDR "
            f"{agent} node-agent {job_dir}/plan.json") in request.script
    node = _normal(list(request.node_command))
    assert node[:4] == ["docker", "run", "--name", "primus-<job>-<rank>"]
    assert "io.primus-runner.slurm-job=<job>" in node and "io.primus-runner.node-rank=<rank>" in node
    assert node[-4:] == ["python", "train.py", "--lr", "0.1"] and "primus-test/busybox:latest" in node
    text = request.render()
    assert " ".join(request.command()) in text and "#SBATCH --nodes=2" in text and "python train.py --lr 0.1" in text
    assert CANARY not in text + repr(request.to_dict())


def test_slurm_exports_the_tracker_run_ids_before_the_handshake(work):
    """The script names MLFLOW_RUN_ID from the start: the handshake's value is given by name, the script is unchanged."""
    from runner.engines.slurm import SlurmEngine

    layer = {**LAYER, "trackers": {"disable_mlflow": False}}
    config, planned = plan_from_layer(layer, ["python", "t.py"], host={"MLFLOW_TRACKING_URI": "http://127.0.0.1:1"},
                                      flags=LaunchFlags(name="golden-job"))
    engine = SlurmEngine()
    request = engine.request(planned.require(), _ctx(engine, config, planned.scope))
    assert "PRIMUS_RUNNER_ENV_MLFLOW_RUN_ID" in request.export
    after = request.with_run_env({"MLFLOW_RUN_ID": "r1"})
    assert after.script == request.script and after.plan.job.public_env()["MLFLOW_RUN_ID"] == "r1"


def test_process_request_is_the_golden_one(work):
    from runner.engines.process import DEFAULT_PATH, ProcessEngine

    config, plan, scope = _plan(work)
    engine = ProcessEngine()
    request = engine.request(plan, _ctx(engine, config, scope))
    python = shutil.which("python", path=DEFAULT_PATH)  # looked up on the child's own PATH
    assert request.argv == ("python", "train.py", "--lr", "0.1") and request.cwd == "/w" and request.program == python
    assert request.to_dict() == {"command": ["python", "train.py", "--lr", "0.1"], "program": python, "workdir": "/w",
                                 "env": {"HF_TOKEN": "***", "LIT": "one"}, "secrets": ["HF_TOKEN"],
                                 "environment": {"HF_TOKEN": "***", "LIT": "one", "PATH": DEFAULT_PATH},
                                 "inherit_env": False, "withheld": []}  # a plan not made for a host process: forwarded names only
    assert request.render().splitlines() == ["command  python train.py --lr 0.1",
                                             f"program  {python or '(not found on this host: python)'}", "workdir  /w",
                                             "environment (only these):",
                                             "  HF_TOKEN=*** [secret]", "  LIT=one", f"  PATH={DEFAULT_PATH}   (default)"]
    assert request.with_run_env({"WANDB_RUN_ID": "w1"}).job.public_env()["WANDB_RUN_ID"] == "w1"


# ---------------------------------------------------------------- docker run's --entrypoint, --label, --platform, -i, -t


def _flagged(work, secrets_via="stdin", **flags):
    layer = {**LAYER, "container": {**LAYER["container"], "secrets_via": secrets_via}}
    config, planned = plan_from_layer(layer, ["python", "train.py"], host={"HF_TOKEN": CANARY, "PATH": "/usr/bin"},
                                      flags=LaunchFlags(name="golden-job", **flags))
    return config, planned


def _docker_request(work, secrets_via="stdin", options=None, **flags):
    from runner.engines.docker import DockerEngine

    config, planned = _flagged(work, secrets_via, **flags)
    engine = DockerEngine()
    return engine.request(planned.require(), _ctx(engine, config, planned.scope, **(options or {})))


def test_entrypoint_label_and_platform_are_in_the_body_the_argv_and_the_text(work):
    from runner.engines.docker.shim import shim_entrypoint

    request = _docker_request(work, entrypoint="/usr/bin/env", labels=("team=ml", "empty", "team=vision"), platform="linux/arm64")
    body = _body(request)
    assert body["Entrypoint"] == shim_entrypoint() + ["/usr/bin/env"]  # the shim execs the user's entrypoint, not the image's
    assert request.pending == ()  # nothing to learn from the image: the entrypoint is known
    assert {k: v for k, v in body["Labels"].items() if not k.startswith("io.primus-runner.")} == {"team": "vision", "empty": ""}
    assert body["Labels"]["io.primus-runner.job"] == "golden-job"  # the runner's own labels are all still there
    argv = _normal(request.argv())
    assert argv[argv.index("--platform") + 1] == "linux/arm64"
    assert ["--label", "team=vision"] == argv[argv.index("team=vision") - 1:argv.index("team=vision") + 1]
    assert argv[-7:] == ["primus-test/busybox:latest", "-c", "<stdin-shim>", "primus-shim", "/usr/bin/env", "python", "train.py"]
    assert request.to_dict()["platform"] == "linux/arm64"
    text = request.render()
    assert "--platform linux/arm64" in text and "entrypoint: /usr/bin/env instead of the image's" in text
    assert CANARY not in text + repr(request.to_dict())


def test_entrypoint_without_the_shim_and_the_empty_one(work):
    request = _docker_request(work, secrets_via="env", entrypoint="/bin/echo")
    assert request.config["Entrypoint"] == ["/bin/echo"]
    assert request.argv()[-5:] == ["--entrypoint", "/bin/echo", "primus-test/busybox:latest", "python", "train.py"]
    cleared = _docker_request(work, secrets_via="env", entrypoint="")
    assert cleared.config["Entrypoint"] == []  # docker run --entrypoint "": the image's entrypoint is cleared
    argv = cleared.argv()
    assert argv[argv.index("--entrypoint") + 1] == "" and argv[-3:] == ["primus-test/busybox:latest", "python", "train.py"]
    shimmed = _docker_request(work, entrypoint="")
    assert shimmed.config["Entrypoint"][-1] == "primus-shim" and shimmed.pending == ()  # the shim execs the command itself


def test_a_label_may_not_override_the_runners_own_and_bad_values_are_refused_at_plan_time(work):
    _, planned = _flagged(work, labels=("io.primus-runner.job=other", "=x"), platform="Linux/AMD64", entrypoint="a\nb")
    messages = [p.message for p in planned.problems]
    assert any("io.primus-runner.job" in m and "runner's own" in m for m in messages), messages
    assert any(m.startswith("--label: label '=x'") for m in messages)
    assert any(m.startswith("--platform:") for m in messages) and any(m.startswith("--entrypoint:") for m in messages)
    _, secret = _flagged(work, labels=(f"token={CANARY}",))
    assert any("--label holds a secret value" in p.message for p in secret.problems)
    assert all(CANARY not in str(p) for p in secret.problems)


def test_interactive_and_tty_requests(work):
    from runner.engines.docker.shim import TTY_SHIM, STDIN_SHIM

    tty = _docker_request(work, options={"interactive": True, "tty": True})
    assert tty.config["Tty"] is True and tty.config["OpenStdin"] is True and tty.interactive
    assert tty.config["Entrypoint"][2] == TTY_SHIM
    argv = tty.argv()
    assert "--interactive" in argv and "--tty" in argv
    assert "turns the terminal's echo off" in tty.render()
    piped = _docker_request(work, options={"interactive": True})
    assert piped.config["Tty"] is False and piped.config["Entrypoint"][2] == STDIN_SHIM and "--tty" not in piped.argv()
    plain = _docker_request(work, secrets_via="env", options={"interactive": True})
    assert plain.config["OpenStdin"] is True and "Entrypoint" not in plain.config  # no secrets in stdin: no shim


def test_the_tty_shim_turns_echo_off_and_says_so_before_it_reads_and_restores_before_it_execs():
    from runner.engines.docker.shim import READY, TTY_SHIM

    off, ready = TTY_SHIM.index("stty -echo"), TTY_SHIM.index("printf '\\033]primus-shim-ready\\007'")
    read, restore, execs = TTY_SHIM.index("read -r l"), TTY_SHIM.index('stty "$t"'), TTY_SHIM.index('exec "$@"')
    assert off < ready < read < restore < execs
    assert "-icanon" in TTY_SHIM[off:ready]  # no line length limit for a long payload
    assert "exec </dev/null" not in TTY_SHIM  # the job's stdin is the terminal
    assert READY == b"\x1b]primus-shim-ready\x07"


def test_how_the_image_is_got_and_whether_the_launch_detaches_are_in_the_request(work):
    """``up --build`` and ``--detach`` are decided into the request (and shown), not read by the launch."""
    built = _docker_request(work, options={"build": True, "detach": True})
    assert built.fetch == "build" and built.detach and built.to_dict()["fetch"] == "build" and built.to_dict()["detach"]
    assert any("built from its recipe when it is not local (--build)" in d for d in built.decisions)
    pulled = _docker_request(work)
    assert pulled.fetch == "pull" and not pulled.detach
    assert "pull: missing; image: pulled when it is not local" in pulled.decisions
    assert pulled.to_dict()["ids"] == {"run": RUN_ID}
