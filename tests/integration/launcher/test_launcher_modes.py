"""The Primus launcher's invocations with `primus-runner` in place of `primus-cli`, against a stand-in.

Every example of the launcher's CLI reference (direct, container, slurm srun and
sbatch, the --dry-run forms) runs here against primus-test/primus-standin (a
`primus-cli` and `runner/primus-cli-direct.sh` that print the arguments and the
environment they received), on Docker, on this host and on both Slurm nodes,
and the test checks the exact inner command, the env and the exit code.

The runner is started as `python -P -m runner`: a Primus checkout has its own
`runner/` directory, which must not shadow the runner's package.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from engine_fixtures import assert_no_leak, engine_missing
from primus_standin import IMAGE, OTHER_PYTHON, OTHER_USER, ROOT, RUNNER, STANDIN, TRAIN, seen
from primus_standin import space, standin_image  # noqa: F401 - fixtures
from runs_helpers import slurm_job_files

pytestmark = [pytest.mark.docker]


def legacy(raw: str):
    """Primus's legacy override typing (see tests/unit/trackers/test_primus_overrides.py)."""
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    try:
        return eval(raw, {})  # noqa: S307 - the values the runner itself wrote
    except Exception:
        return raw


def overrides(tokens: list[str]) -> dict:
    found, i = {}, 0
    while i < len(tokens):
        body = tokens[i][2:]
        if "=" in body:
            key, raw = body.split("=", 1)
            i += 1
        else:
            key, raw = body, tokens[i + 1]
            i += 2
        found[key] = legacy(raw)
    return found


# No trackers: key in the config files: no override at all (a built-in default would beat the experiment YAML).
DEFAULT_OVERRIDES: dict = {}


def check_train(got: dict, prefix: list[str]) -> None:
    """The inner command is ``prefix`` + the Primus args, then the tracker overrides Primus reads as configured."""
    assert got["args"][:len(prefix)] == prefix, got["args"]
    assert overrides(got["args"][len(prefix):]) == DEFAULT_OVERRIDES


def no_leak(result: subprocess.CompletedProcess, canary: dict, where: str) -> None:
    assert_no_leak((result.stdout + result.stderr).encode(), canary, where)


# --------------------------------------------------------------------------- container


def test_container_with_volume_mounts_the_checkout_and_runs_its_direct_launcher(space, tmp_path):
    """`container --volume /data:/data -- train pretrain --config /data/exp.yaml`, Primus checkout from PRIMUS_PATH."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "exp.yaml").write_text("exp: 1\n")
    result = space.run("container", "--volume", f"{data}:/data", "--env", "HF_TOKEN", "--",
                       "train", "pretrain", "--config", "/data/exp.yaml",
                       env={"PRIMUS_PATH": str(space.checkout), "PRIMUS_STANDIN_EXIT": "7"})
    assert result.returncode == 7, result.stderr  # the job's own exit code
    (got,) = seen(result.stdout).values()
    assert got["path"] == str(space.checkout / "runner" / "primus-cli-direct.sh") and got["pwd"] == str(space.checkout)
    check_train(got, ["train", "pretrain", "--config", "/data/exp.yaml"])
    assert got["env"]["HF_TOKEN"] == "***" and got["secretlen"].startswith(f"HF_TOKEN={len(space.canary['HF_TOKEN'])} ")
    assert got["env"]["PRIMUS_STANDIN_EXIT"] == "7" and got["env"]["PRIMUS_PATH"] == str(space.checkout)
    assert "HOST_ONLY" not in got["env"]
    no_leak(result, space.canary, "container")


def test_container_without_a_checkout_runs_the_images_primus_cli(space):
    result = space.run("container", "--", *TRAIN)
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["path"] == "/usr/local/bin/primus-cli"
    check_train(got, ["direct", "--", *TRAIN])


def test_container_in_a_checkout_and_a_configured_entry(space):
    """The current directory as the checkout (as the launcher finds it); container.entry replaces the entry point;
    --debug sets PRIMUS_LOG_LEVEL=DEBUG; a second run of one config name does not collide (per-job suffix)."""
    result = space.run("--config", str(space.config), "--debug", "container", "--", "benchmark", "gemm", "-M", "4096", cwd=space.checkout)
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["path"] == str(space.checkout / "runner" / "primus-cli-direct.sh") and got["pwd"] == str(space.checkout)
    assert got["args"] == ["benchmark", "gemm", "-M", "4096"]  # not a training command: no overrides
    assert got["env"]["PRIMUS_LOG_LEVEL"] == "DEBUG"
    (space.root / "entry.yaml").write_text("container:\n  entry: [primus-cli, direct, --single, --]\n")
    result = space.run("--config", str(space.root / "entry.yaml"), "container", "--", "preflight", "--host")
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["path"] == "/usr/local/bin/primus-cli" and got["args"] == ["direct", "--single", "--", "preflight", "--host"]


def test_container_workdir_keeps_the_inner_launcher_and_caches_yield_to_data_path(space):
    """`container --workdir /workspace -- train …`: the inner `bash <checkout>/runner/primus-cli-direct.sh` still runs
    (its path is absolute); with DATA_PATH forwarded the runner sets no HF_HUB_CACHE (Primus places it there)."""
    result = space.run("container", "--workdir", "/workspace", "--env", "DATA_PATH=/data", "--", *TRAIN,
                       env={"PRIMUS_PATH": str(space.checkout)})
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["path"] == str(space.checkout / "runner" / "primus-cli-direct.sh") and got["pwd"] == "/workspace"
    assert "HF_HUB_CACHE" not in got["env"] and got["env"]["TRITON_CACHE_DIR"].startswith("/primus-runner/cache/")


def test_container_group_add_render_and_an_exported_docker_image(space, tmp_path):
    """`container --group-add render` reaches the create body as given; an exported DOCKER_IMAGE is the image
    the job runs in (as primus-cli takes it), over the config's."""
    planned = space.run("--json", "--dry-run", "container", "--group-add", "render", "--", *TRAIN)
    assert planned.returncode == 0, planned.stderr
    assert "render" in json.loads(planned.stdout)["request"]["create"]["HostConfig"]["GroupAdd"]
    (tmp_path / "busybox.yaml").write_text("container:\n  options:\n    image: primus-test/busybox:latest\n")
    result = space.run("--config", str(tmp_path / "busybox.yaml"), "container", "--", *TRAIN, env={"DOCKER_IMAGE": IMAGE})
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["path"] == "/usr/local/bin/primus-cli" and f"image {IMAGE} from DOCKER_IMAGE" in result.stderr


def _names() -> set[str]:
    out = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_dry_run_forms_create_no_container(space):
    name = f"dry-{uuid.uuid4().hex[:8]}"
    before = _names()
    (space.root / "dry.yaml").write_text("main:\n  dry_run: true\n")  # a config that says dry run launches nothing
    for args in (
        ["--dry-run", "container", "--name", name, "--clean", "--", *TRAIN],
        ["container", "--dry-run", "--name", name, "--", *TRAIN],
        ["--config", str(space.root / "dry.yaml"), "container", "--name", name, "--", *TRAIN],
    ):
        result = space.run(*args)
        assert result.returncode == 0, result.stderr
        assert "primus-cli direct -- train pretrain --config exp.yaml" in result.stdout
        assert "standin-argc" not in result.stdout  # nothing ran
    assert name not in _names() and before >= {n for n in _names() if n.startswith("dry-")}


# --------------------------------------------------------------------------- direct


def test_direct_runs_the_checkout_with_the_users_environment_less_unforwarded_secrets(space):
    result = space.run("--config", str(space.config), "direct", "--env", "HF_TOKEN", "--env", "LIT=one", "--", *TRAIN,
                       cwd=space.checkout, env={"PRIMUS_STANDIN_EXIT": "5", "MY_SERVICE_TOKEN": space.canary["WANDB_API_KEY"]})
    assert result.returncode == 5, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["path"] == str(space.checkout / "runner" / "primus-cli-direct.sh") and got["pwd"] == str(space.checkout)
    check_train(got, ["--", *TRAIN])  # as primus-cli direct -- ARGS hands them over
    env = got["env"]
    assert env["HF_TOKEN"] == "***" and got["secretlen"].startswith(f"HF_TOKEN={len(space.canary['HF_TOKEN'])} ")
    assert env["LIT"] == "one" and env["PRIMUS_STANDIN_EXIT"] == "5"
    assert env["HOST_ONLY"] == "host-only-value-q81z" and env["HOME"] == str(space.home)  # the user's environment, as the launcher's
    assert "MY_SERVICE_TOKEN" not in env  # a secret by its name that nothing forwards: withheld
    no_leak(result, space.canary, "direct")


def test_direct_env_of_the_launcher_file_is_forwarded_under_the_policy(space):
    (space.root / "direct.yaml").write_text("direct:\n  env: [FROM_DIRECT=yes, HOST_ONLY]\n")
    result = space.run("--config", str(space.root / "direct.yaml"), "direct", "--", "preflight", cwd=space.checkout)
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["env"]["FROM_DIRECT"] == "yes" and got["env"]["HOST_ONLY"] == "host-only-value-q81z"
    assert got["args"] == ["--", "preflight"]


def test_direct_without_a_checkout_runs_primus_cli_from_path(space, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(STANDIN / "standin.sh", bin_dir / "primus-cli")
    result = space.run("--dry-run", "direct", "--", *TRAIN, env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert result.returncode == 0 and "standin-argc" not in result.stdout, result.stderr
    assert "primus-cli direct -- train pretrain --config exp.yaml" in result.stdout
    result = space.run("direct", "--single", "--", *TRAIN, env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["path"].endswith("/primus-cli")
    check_train(got, ["direct", "--single", "--", *TRAIN])


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_direct_forwards_the_signal_and_returns_its_code(space, signum, code):
    (space.root / "entry.yaml").write_text(
        "direct:\n  entry: [sh, -c, 'trap \"echo got-term; exit 9\" TERM INT; echo ready; sleep 60 & wait', sh]\n")
    proc = subprocess.Popen([*RUNNER, "--config", str(space.root / "entry.yaml"), "direct", "--", "x"], cwd=space.project,
                            env=space.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert "got-term" in out
    left = subprocess.run(["pgrep", "-f", "sleep 60 & wait"], capture_output=True, text=True).stdout.split()
    assert not left, "the child outlived the runner"


# --------------------------------------------------------------------------- slurm


def _by_rank(result) -> dict[str, dict]:
    ranks = seen(result.stdout)
    assert set(ranks) == {"0", "1"}, result.stdout + result.stderr
    return ranks


@pytest.mark.slurm
def test_slurm_srun_runs_the_container_entry_on_both_nodes(space, slurm_cluster):
    """`slurm srun -N 2 -- train pretrain --config exp.yaml` in a checkout (the default entry is container)."""
    result = space.run("--config", str(space.config), "slurm", "srun", "-N", "2", "--", *TRAIN, cwd=space.checkout,
                       env={"PRIMUS_STANDIN_EXIT": "4"})
    assert result.returncode == 4, result.stderr  # the job's code, like submit --wait
    ranks = _by_rank(result)
    masters = set()
    for rank, got in ranks.items():
        assert got["path"] == str(space.checkout / "runner" / "primus-cli-direct.sh") and got["pwd"] == str(space.checkout)
        check_train(got, TRAIN)
        env = got["env"]
        assert env["NODE_RANK"] == rank and env["NNODES"] == "2" and env["HF_TOKEN"] == "***"
        assert got["secretlen"].startswith(f"HF_TOKEN={len(space.canary['HF_TOKEN'])} ") and "HOST_ONLY" not in env
        masters.add((env["MASTER_ADDR"], env["MASTER_PORT"]))
    assert len(masters) == 1
    no_leak(result, space.canary, "slurm srun")


@pytest.mark.slurm
def test_slurm_srun_with_partition_and_container_entry(space, slurm_cluster):
    """`slurm srun -N 4 -p P -- container -- train …` (2 nodes here), the image's primus-cli without a checkout."""
    result = space.run("slurm", "srun", "-N", "2", "-p", slurm_cluster.partition, "--", "container", "--gpus", "0",
                       "--env", "LIT=x", "--", *TRAIN)
    assert result.returncode == 0, result.stderr
    for rank, got in _by_rank(result).items():
        assert got["path"] == "/usr/local/bin/primus-cli" and got["env"]["LIT"] == "x" and got["env"]["NODE_RANK"] == rank
        check_train(got, ["direct", "--", *TRAIN])


@pytest.mark.slurm
def test_slurm_sbatch_submits_and_answers_like_submit(space, slurm_cluster):
    """`slurm sbatch -N 8 -t 8:00:00 -o train.log -- train …` (2 nodes here): --json {"job_id"}, the job runs on both."""
    result = space.run("--json", "slurm", "sbatch", "-N", "2", "-t", "5", "-o", "train.log", "--", *TRAIN)
    assert result.returncode == 0, result.stderr
    job_id = json.loads(result.stdout)["job_id"]
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        status = space.run("--json", "status", job_id)
        state = json.loads(status.stdout)
        if state["exit_code"] is not None:
            break
        time.sleep(1)
    assert state["exit_code"] == 0, state
    (out_file,) = slurm_job_files(space.home, f"slurm-{job_id}.out")
    text = out_file.read_text()
    lines = [re.sub(r"^(\d+): ", r"[\1] ", line) for line in text.splitlines()]  # srun --label prefixes
    ranks = seen("\n".join(lines))
    assert set(ranks) == {"0", "1"}, text
    for got in ranks.values():
        check_train(got, ["direct", "--", *TRAIN])
    assert_no_leak(text.encode() + (result.stdout + result.stderr).encode(), space.canary, "sbatch")


@pytest.mark.slurm
def test_slurm_dry_run_submits_nothing(space, slurm_cluster):
    """`--dry-run slurm srun -N 2 -- train …` and main.dry_run: true: the batch script, no job, no job directory."""
    (space.root / "dry.yaml").write_text("main:\n  dry_run: true\n")
    for args in (["--dry-run", "slurm", "srun", "-N", "2", "--", *TRAIN],
                 ["--config", str(space.root / "dry.yaml"), "slurm", "sbatch", "-N", "2", "--", *TRAIN]):
        result = space.run(*args)
        assert result.returncode == 0, result.stderr
        assert "#SBATCH --nodes=2" in result.stdout and "standin-argc" not in result.stdout
        assert not (space.project / "primus-runs").exists()
    queue = subprocess.run(["squeue", "-h", "-o", "%j"], capture_output=True, text=True).stdout
    assert "primus-training" not in queue


# --------------------------------------------------------------------------- owner scope



def _as_other(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = ["env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", f"HOME=/home/{OTHER_USER}", f"PYTHONPATH={ROOT}", "NO_COLOR=1"]
    return subprocess.run(["runuser", "-u", OTHER_USER, "--", *env, OTHER_PYTHON, "-P", "-m", "runner", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_owner_scope_across_two_users(space, busybox_image):
    """A second, real user launches a runner container; the first user's ps/logs/down do not see it without
    --all-users, and the second user's `down --all` and `--clean` leave the first user's container running."""
    import tempfile

    if not Path(OTHER_PYTHON).exists():
        engine_missing("the second user's venv", "", "run bash .ci/setup-primus-standin.sh")
    shared = Path(tempfile.mkdtemp(prefix="owner-"))
    try:
        shared.chmod(0o755)
        config = f"container:\n  gpu: none\n  stop_timeout: 1\n  options:\n    image: {busybox_image}\n    group-add: []\n"
        (shared / ".primus.yaml").write_text(config)
        (shared / ".primus.yaml").chmod(0o644)
        mine, theirs = f"own-{uuid.uuid4().hex[:8]}", f"other-{uuid.uuid4().hex[:8]}"
        other = _as_other(shared, "up", "-d", "--name", theirs, "--", "sleep", "120")
        assert other.returncode == 0, other.stderr
        me = subprocess.run([*RUNNER, "up", "-d", "--name", mine, "--", "sleep", "120"], cwd=shared, env=space.env,
                            capture_output=True, text=True, timeout=120)
        assert me.returncode == 0, me.stderr

        ps = space.run("ps", "--json", cwd=shared)
        names = {row["name"] for row in json.loads(ps.stdout)}
        assert mine in names and theirs not in names
        every = {row["name"]: row["owner"] for row in json.loads(space.run("ps", "--json", "--all-users", cwd=shared).stdout)}
        assert every[mine] == str(os.getuid()) and every[theirs] == subprocess.check_output(["id", "-u", OTHER_USER], text=True).strip()
        for args in (["logs", theirs], ["down", theirs]):
            refused = space.run(*args, cwd=shared)
            assert refused.returncode == 1 and "another user's" in refused.stderr, refused.stderr
        assert theirs in _names()

        # the second user's down --all and --clean: their own containers only
        down = _as_other(shared, "down", "--all")
        assert down.returncode == 0, down.stderr
        assert theirs not in _names() and mine in _names()
        again = _as_other(shared, "up", "-d", "--name", theirs, "--", "sleep", "120")
        assert again.returncode == 0, again.stderr
        clean = _as_other(shared, "container", "--clean", "--image", IMAGE, "--gpus", "0", "--", "preflight")
        assert clean.returncode == 0, clean.stderr
        assert theirs not in _names() and mine in _names()

        forced = space.run("down", "--all-users", mine, cwd=shared)
        assert forced.returncode == 0 and mine not in _names(), forced.stderr
    finally:
        subprocess.run(["docker", "rm", "-f", mine, theirs], capture_output=True)
        shutil.rmtree(shared, ignore_errors=True)
