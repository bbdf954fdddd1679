"""Completion that knows the domain, in a real bash, zsh and fish: srun/sbatch and Slurm flags after
`slurm`, the runner's own runs and Slurm jobs after `logs`/`status`/`cancel` (from its state),
descriptions with their apostrophes and colons intact; FORCE_COLOR honoured."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine_fixtures import engine_missing
from pty_session import PtySession
from cli_runner import run_cli, user_env
from ux_helpers import NO_DOCKER

JOB = "4242"


def need(shell: str) -> None:
    if not shutil.which(shell):
        engine_missing(shell, f"apt-get install {shell}")


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A user with one recorded run (the demo, on the process engine) and one Slurm job directory."""
    home = tmp_path_factory.mktemp("home")
    (home / "primus-runs" / f"20261201-000000-job").mkdir(parents=True)
    (home / "primus-runs" / "20261201-000000-job" / f"slurm-{JOB}.out").write_text("0: done\n")
    demo = run_cli(home, "demo", env={"DOCKER_HOST": NO_DOCKER})
    assert demo.returncode == 0, demo.stderr
    bin_dir = home / "bin"  # `primus-runner` on PATH, as the scripts call it on TAB
    bin_dir.mkdir()
    (bin_dir / "primus-runner").write_text(f"#!/bin/sh\nexec {sys.executable} -P -m runner \"$@\"\n")
    (bin_dir / "primus-runner").chmod(0o755)
    for shell in ("bash", "zsh", "fish"):
        text = run_cli(home, "completion", shell)
        assert text.returncode == 0, text.stderr
        (home / f"completion.{shell}").write_text(text.stdout)
    return home


@pytest.fixture(scope="module")
def run_id(home) -> str:
    result = run_cli(home, "--json", "runs")
    import json

    (run,) = json.loads(result.stdout)
    return run["id"]


def env_for(home: Path) -> dict:
    env = user_env(home, {"DOCKER_HOST": NO_DOCKER})
    env["PATH"] = f"{home / 'bin'}:{env['PATH']}"
    return env


def bash(home: Path, line: str) -> list[str]:
    need("bash")
    words = line.split(" ")
    quoted = " ".join(f"'{w}'" for w in words)
    body = (f"source {home / 'completion.bash'}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _primus_runner; "
            "printf '%s\\n' \"${COMPREPLY[@]}\"")
    result = subprocess.run(["bash", "--norc", "-c", body], cwd=home, env=env_for(home), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def fish(home: Path, line: str) -> list[tuple[str, str]]:
    need("fish")
    result = subprocess.run(["fish", "--no-config", "-c", f"source {home / 'completion.fish'}; complete -C '{line}'"],
                            cwd=home, env=env_for(home), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [tuple((row.split("\t") + [""])[:2]) for row in result.stdout.splitlines()]


def zsh(home: Path, keys: str, timeout: float = 60, inline: str | None = None) -> str:
    """An interactive zsh on a 250-column pseudo-terminal: load compinit and the script, type ``keys``
    (ending in a TAB), return what the terminal shows: up to the prompt zsh draws again under a
    listing, or up to ``inline`` when the one candidate is completed in the line (no new prompt)."""
    need("zsh")
    env = {**env_for(home), "TERM": "dumb", "PS1": "READY> "}
    with PtySession(["zsh", "-f", "-i"], home, env, rows=50, cols=250, timeout=timeout) as session:
        session.send(f"autoload -U compinit; compinit -u -D; source {home / 'completion.zsh'}; print LOADED$((1+1))\n".encode())
        session.expect("LOADED2")
        session.expect("READY> ")
        start = len(session.transcript)
        session.send(keys.encode())
        end = session.expect(*(["\nREADY> "] + ([re.escape(inline)] if inline else []))).end()
        return session.transcript[start:end].decode(errors="replace")


def test_bash_slurm_launchers_and_flags(home):
    assert bash(home, "primus-runner slurm ") == ["srun", "sbatch"]
    assert set(bash(home, "primus-runner slurm srun --nod")) == {"--nodes", "--nodelist"}
    assert "--partition" in bash(home, "primus-runner slurm sbatch --par")


def test_bash_logs_status_cancel_offer_the_runners_own_runs_and_jobs(home, run_id):
    assert {run_id, JOB} <= set(bash(home, "primus-runner logs "))
    assert JOB in bash(home, "primus-runner status ") and JOB in bash(home, "primus-runner cancel ")
    assert bash(home, "primus-runner status ") == [JOB], "status takes Slurm job ids only (not the process engine's pid)"
    assert not [w for w in bash(home, "primus-runner logs ") if "/" in w], "no file names"


def test_fish_domain_and_descriptions(home, run_id):
    assert {c for c, _ in fish(home, "primus-runner slurm ")} >= {"srun", "sbatch"}
    assert {run_id, JOB} <= {c for c, _ in fish(home, "primus-runner logs ")}
    assert ("status", "a Slurm job's state and exit code") in fish(home, "primus-runner sta")
    gpus = dict(fish(home, "primus-runner up --gpu"))["--gpus"]
    assert gpus.startswith("which GPUs: all (default), N free ones"), gpus


def test_zsh_domain_and_descriptions(home, run_id):
    listing = zsh(home, "primus-runner s\t")
    assert "a Slurm job's state and exit code" in listing, listing
    flags = zsh(home, "primus-runner up --gpu\t")
    assert "which GPUs: all (default), N free ones" in flags, flags
    slurm = zsh(home, "primus-runner slurm s\t")  # both start with s: the list
    assert "srun" in slurm and "sbatch" in slurm, slurm
    jobs = zsh(home, "primus-runner status \t", inline=f"status {JOB} ")  # the one job: completed in the line
    assert f"status {JOB} " in jobs, jobs
    assert run_id in zsh(home, "primus-runner logs \t\t"), "logs lists the run ids too"


def test_force_color_without_a_terminal(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: busybox\n")
    env = {k: v for k, v in user_env(tmp_path).items() if k != "NO_COLOR"}
    plain = subprocess.run([sys.executable, "-P", "-m", "runner", "up", "--", "true"], cwd=tmp_path,
                           env={**env, "DOCKER_HOST": NO_DOCKER}, capture_output=True, text=True, timeout=60)
    forced = subprocess.run([sys.executable, "-P", "-m", "runner", "up", "--", "true"], cwd=tmp_path,
                            env={**env, "DOCKER_HOST": NO_DOCKER, "FORCE_COLOR": "1"}, capture_output=True, text=True, timeout=60)
    off = subprocess.run([sys.executable, "-P", "-m", "runner", "up", "--", "true"], cwd=tmp_path,
                         env={**env, "DOCKER_HOST": NO_DOCKER, "FORCE_COLOR": "1", "NO_COLOR": "1"}, capture_output=True, text=True, timeout=60)
    assert "\x1b[" not in plain.stderr and "\x1b[1;31merror: " in forced.stderr and "\x1b[" not in off.stderr
