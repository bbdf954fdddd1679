"""Every example printed by `--help` (each command's, `slurm srun`'s and `slurm sbatch`'s) and every
`primus-runner` command in the README's shell blocks runs here, against the real engines.

The examples are parsed out of the help text and the README, not copied: a new or changed
example is run as soon as it is printed. What a test cannot take literally is substituted,
and only that (``SUBSTITUTIONS``): placeholder names and job ids become a real container
and real jobs, node counts above the test cluster's two become 2, the partitions `P` and
`gpu` become the cluster's, `/data` a temporary directory. Examples that need a GPU or a
registry run as the text says where that still works (``check --gpu rocm`` answers with
the missing devices, exit 2) or with ``--dry-run`` (``build --flavor rocm``: its base
image is on a registry this machine cannot reach). ``down --all`` runs as a second real
user (primus-second), so it cannot touch the containers of anything else running as root.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from engine_fixtures import PYTHON_IMAGE, SLURM_PARTITION, engine_missing
from primus_standin import IMAGE, OTHER_PYTHON, OTHER_USER, ROOT, RUNNER, STANDIN, seen, standin_image  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.docker, pytest.mark.slurm]


def help_examples() -> list[tuple[str, str]]:
    """(where, example) for every example line of every command's --help (the parser's own help text)."""
    from runner.cli import build_parser
    from runner.cli.suggest import HIDDEN_COMMANDS

    def commands(parser):
        return next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices  # noqa: SLF001

    top = commands(build_parser())
    helps = {name: p for name, p in top.items() if name not in HIDDEN_COMMANDS}
    helps.update({f"slurm {name}": p for name, p in commands(top["slurm"]).items()})
    found = []
    for name, parser in helps.items():
        match = re.search(r"^examples?:\n((?:  .+\n?)+)", parser.format_help(), re.M)
        assert match, f"`{name} --help` prints no example"
        for line in match.group(1).splitlines():
            for example in line.strip().split("; "):
                found.append((f"{name} --help", example))
    return found


def readme_examples() -> list[tuple[str, str]]:
    """(where, command) for every `primus-runner …` line in the README's bash blocks."""
    text = (ROOT / "README.md").read_text()
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command.startswith("primus-runner "):
                found.append(("README.md", command))
    return found


RUN_ID = "20261201-103512-3fa9c1"  # the run id the help examples name


class Lab:
    """The project the examples run in, the things they name, and how to run one."""

    def __init__(self, root: Path, slurm_partition: str):
        self.root = root
        self.project = root / "project"
        self.project.mkdir()
        self.root.chmod(0o755)
        self.project.chmod(0o755)
        (self.project / "train.py").write_text("print('train ok')\n")
        (self.project / "slurm-logs").mkdir()
        (self.project / "runner").mkdir()  # the project is a Primus checkout, as the launcher finds one
        shutil.copy(STANDIN / "standin.sh", self.project / "runner" / "primus-cli-direct.sh")  # one stand-in for both launchers
        self.data = root / "data"
        self.data.mkdir()
        (self.data / "exp.yaml").write_text("exp: 1\n")
        self.bin = root / "bin"
        self.bin.mkdir()
        shutil.copy(STANDIN / "standin.sh", self.bin / "primus-cli")
        (self.project / ".primus.yaml").write_text(
            f"container:\n  gpu: none\n  stop_timeout: 1\n  options:\n    image: {IMAGE}\n    group-add: []\n"
            f"slurm:\n  partition: {slurm_partition}\n  time: \"5\"\n")
        python = self.root / "python"  # the test image has python3 only; training images have python
        python.write_text("#!/bin/sh\nexec python3 \"$@\"\n")
        python.chmod(0o755)
        (self.root / "python.yaml").write_text(
            f"container:\n  options:\n    image: {PYTHON_IMAGE}\n    workdir: /w\n"
            f"    volume: ['{self.project}:/w', '{python}:/usr/local/bin/python:ro']\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "SLURM_", "HF_", "WANDB", "MLFLOW"))}
        self.env.update(HOME=str(root), NO_COLOR="1", PATH=f"{self.bin}:{os.environ['PATH']}")
        self.container = f"primus-{uuid.uuid4().hex[:8]}"
        self.exec_container = f"primus-exec-{uuid.uuid4().hex[:8]}"  # a running one, for `exec`
        self.run_id = None  # the run record of self.container
        self.job = None  # a finished Slurm job
        self.running_job = None  # one to cancel

    def argv(self, command: str) -> list[str]:
        words = shlex.split(self.substitute(command))
        assert words[0] == "primus-runner", command
        return [*RUNNER, *words[1:]]

    def substitute(self, command: str) -> str:
        if shlex.split(command)[1:2] == ["exec"]:  # into a running container; no GPU tool here, so `true` stands in
            command = command.replace("primus-1a2b3c4d", self.exec_container).replace("nvidia-smi", "true")
        subs = [("primus-1a2b3c4d", self.container), ("/data", str(self.data)), ("-N 4", "-N 2"), ("-N 8", "-N 2"),
                ("-p P", f"-p {SLURM_PARTITION}"), ("--partition gpu", f"--partition {SLURM_PARTITION}")]
        if self.job:
            subs.append(("status 1234", f"status {self.job}"))
            subs.append(("logs 1234", f"logs {self.job}"))
        if self.running_job:
            subs.append(("cancel 1234", f"cancel {self.running_job}"))
        if self.run_id:
            subs.append((RUN_ID, self.run_id))
        for old, new in subs:
            command = re.sub(rf"(?<![\w/-]){re.escape(old)}(?![\w-])", new, command)
        return command

    def run(self, command: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        argv = self.argv(command)
        if "python train.py" in command:  # the python image, the project mounted at /w
            argv = [*argv[:len(RUNNER)], "--config", str(self.root / "python.yaml"), *argv[len(RUNNER):]]
        return subprocess.run(argv, cwd=self.project, env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=timeout)


def run_as_other(lab: Lab, command: str) -> subprocess.CompletedProcess:
    if not Path(OTHER_PYTHON).exists():
        engine_missing("the second user's venv", "", "run bash .ci/setup-primus-standin.sh")
    words = lab.argv(command)[len(RUNNER):]
    env = ["env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", f"HOME=/home/{OTHER_USER}", f"PYTHONPATH={ROOT}", "NO_COLOR=1"]
    return subprocess.run(["runuser", "-u", OTHER_USER, "--", *env, OTHER_PYTHON, "-P", "-m", "runner", *words],
                          cwd=lab.project, capture_output=True, text=True, timeout=120)


def expect(lab: Lab, where: str, command: str, result: subprocess.CompletedProcess) -> None:
    """What each example must do, by what it is."""
    out = result.stdout
    info = f"{where}: `{command}` -> {lab.substitute(command)}\nexit {result.returncode}\n{out[-2000:]}\n{result.stderr[-2000:]}"
    words = lab.argv(command)[len(RUNNER):]
    if words[:2] == ["check", "--gpu"] and words[2] == "rocm":  # no GPU on this machine: the devices are named
        assert result.returncode == 2 and "/dev/kfd" in result.stderr, info
        return
    assert result.returncode == 0, info
    if "python train.py" in command and words[0] in ("up", "submit"):
        assert "train ok" in out, info
    if words[0] in ("container", "up") and "train" in words:
        assert seen(out), info
    if words[0] == "slurm" and "sbatch" not in words:
        assert set(seen(out)) == {"0", "1"}, info
    if words[:2] == ["ps", "--json"]:
        assert isinstance(json.loads(out), list), info
    if words[0] == "status" and "--json" in words:
        assert json.loads(out)["exit_code"] == 0, info


@pytest.fixture(scope="module")
def lab(slurm_cluster, busybox_image, python_image, standin_image):
    root = Path(tempfile.mkdtemp(prefix="help-examples-"))
    the_lab = Lab(root, slurm_cluster.partition)
    yield the_lab
    subprocess.run(["docker", "rm", "-f", the_lab.container, the_lab.exec_container], capture_output=True)
    if the_lab.running_job:
        subprocess.run(["scancel", the_lab.running_job], capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


def _prepare(lab: Lab, command: str) -> None:
    """What an example names must exist: a runner container, a finished job, a running job."""
    words = shlex.split(command)
    if words[1] == "exec" and lab.exec_container not in subprocess.run(
            ["docker", "ps", "--format", "{{.Names}}"], capture_output=True, text=True).stdout.split():
        started = lab.run(f"primus-runner up -d --name {lab.exec_container} -- sleep 300")
        assert started.returncode == 0, started.stderr
    if RUN_ID in words:
        words = [*words, "primus-1a2b3c4d"]  # the run of the lab's container
    if lab.container and ("primus-1a2b3c4d" in words) and lab.container not in subprocess.run(
            ["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True).stdout.split():
        started = lab.run(f"primus-runner up -d --name {lab.container} -- sh -c 'echo hello from the container; sleep 1'")
        assert started.returncode == 0, started.stderr
    if RUN_ID in words and not lab.run_id:
        runs = json.loads(lab.run("primus-runner runs --json").stdout)
        lab.run_id = next(r["id"] for r in runs if r["name"] == lab.container)
    if "1234" in words and words[1] in ("status", "logs") and not lab.job:
        done = lab.run("primus-runner --json slurm sbatch -N 2 -- train pretrain --config exp.yaml")
        assert done.returncode == 0, done.stderr
        lab.job = json.loads(done.stdout)["job_id"]
        for _ in range(180):  # until it has ended
            state = json.loads(subprocess.run([*RUNNER, "--json", "status", lab.job], cwd=lab.project, env=lab.env,
                                              capture_output=True, text=True).stdout)
            if state["exit_code"] is not None:
                break
            time.sleep(1)
    if "1234" in words and words[1] == "cancel" and not lab.running_job:
        started = lab.run("primus-runner --json submit -- sleep 300")
        assert started.returncode == 0, started.stderr
        lab.running_job = json.loads(started.stdout)["job_id"]


EXAMPLES = help_examples() + readme_examples()


@pytest.mark.parametrize("where, command", EXAMPLES, ids=[f"{w}: {c}" for w, c in EXAMPLES])
def test_example_runs(lab, where, command):
    _prepare(lab, command)
    words = shlex.split(command)
    if words[0] == "source":  # source <(primus-runner completion bash)
        script = (f"primus-runner() {{ {' '.join(map(shlex.quote, RUNNER))} \"$@\"; }}; "
                  f"{command} && complete -p primus-runner")
        result = subprocess.run(["bash", "-c", script], cwd=lab.project, env=lab.env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0 and "primus-runner" in result.stdout, result.stderr
        return
    if words[1:3] == ["down", "--all"]:  # as a second real user: only that user's containers
        result = run_as_other(lab, command)
        assert result.returncode == 0 and "of yours" in result.stderr, result.stderr
        return
    if words[1] == "build" and "rocm" in words and "--dry-run" not in words:
        command += " --dry-run"  # the rocm base image is on a registry this machine cannot reach
    result = on_a_terminal(lab, command) if words[1] == "shell" or "-it" in words else lab.run(command)
    expect(lab, where, command, result)


def on_a_terminal(lab: Lab, command: str) -> subprocess.CompletedProcess:
    """An interactive example (`shell`, `up -it`) as a user runs it: on a pseudo-terminal, typing `exit`."""
    from pty_session import PtySession

    argv = lab.argv(command)
    session = PtySession(argv, lab.project, lab.env, timeout=120)
    try:
        session.expect(r"# ", r"\$ ")
        session.sendline("exit")
        code = session.finish()
    finally:
        session.close()
    return subprocess.CompletedProcess(argv, code, session.transcript.decode(errors="replace"), "")
