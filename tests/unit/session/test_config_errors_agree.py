"""`plan`, `check` and `up --dry-run` agree: every config error a launch would hit is reported
by all three, with the file:line of the bad value, exit 2 (and `submit --dry-run` for Slurm's)."""

from __future__ import annotations


import pytest

from cli_runner import run_cli

NO_DOCKER = "unix:///nonexistent/docker.sock"  # the engine plays no part in these answers
BASE = "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n"

BAD = {
    "ulimit-not-a-number": (BASE + "    ulimit: [\"nofile=lots\"]\n", "nofile=lots"),
    "ulimit-no-equals": (BASE + "    ulimit:\n      - nofile\n", "nofile"),
    "ulimit-soft-above-hard": (BASE + "    ulimit: [\"nofile=10:5\"]\n", "nofile=10:5"),
    "device-relative-target": (BASE + "    device: [\"/dev/null:dev/x\"]\n", "/dev/null:dev/x"),
    "device-relative-source": (BASE + "    device: [dev/null]\n", "dev/null"),
    "network-with-a-space": (BASE + "    network: 'bad net'\n", "bad net"),
    "shm-size": (BASE + "    shm-size: lots\n", "lots"),
    "memory": (BASE + "    memory: 12x\n", "12x"),
    "cpus": (BASE + "    cpus: many\n", "many"),
    "volume-missing-source": (BASE + "    volume: [\"/nonexistent/dryrun-src:/data\"]\n", "/nonexistent/dryrun-src"),
    "image": ("container:\n  gpu: none\n  options:\n    image: \"Bad Image\"\n", "Bad Image"),
    "secret-literal": (BASE + "    env: [\"HF_TOKEN=literal-in-yaml\"]\n", "HF_TOKEN"),
    "denied-name": (BASE + "    env: [LD_PRELOAD]\n", "LD_PRELOAD"),
    "pull-policy": ("container:\n  gpu: none\n  pull: sometimes\n  options:\n    image: primus-test/busybox:latest\n", "sometimes"),
    "slurm-partition": (BASE + "slurm:\n  partition: \"a b\"\n", "a b"),
    "slurm-export": (BASE + "slurm:\n  sbatch_args: [\"--export=ALL\"]\n", "--export=ALL"),
    "direct-dry-run-type": (BASE + "direct:\n  dry_run: sometimes\n", "sometimes"),
    "tracker-output-refused": (BASE + "runs:\n  tracker_outputs: refuse\ntrackers:\n  disable_tensorboard: false\n"
                               "  tensorboard_dir: /unmounted/tb\n", "/unmounted/tb"),
}


def _run(work, *args):
    return run_cli(work, *args, env={"DOCKER_HOST": NO_DOCKER})


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("case", sorted(BAD))
def test_plan_check_and_dry_runs_report_the_same_error_with_file_line(work, case):
    text, needle = BAD[case]
    (work / ".primus.yaml").write_text(text)
    where = f".primus.yaml:{_line_of(text, needle)}"
    commands = [["plan", "--", "true"], ["check"], ["up", "--dry-run", "--", "true"], ["--dry-run", "up", "--", "true"],
                ["submit", "--dry-run", "--", "true"]]
    for args in commands:
        result = _run(work, *args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert where in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert not (work / "primus-runs").exists()  # no job directory from the Slurm dry run


def test_check_json_names_the_line_of_an_engine_value(work):
    import json

    text, needle = BAD["ulimit-not-a-number"]
    (work / ".primus.yaml").write_text(text)
    data = json.loads(_run(work, "--json", "check").stdout)
    assert data["ok"] is False
    assert [p["where"] for p in data["problems"]] == [f"{work / '.primus.yaml'}:{_line_of(text, needle)}"]
