"""The launcher's invocations do what the launcher does with them, against the Primus stand-in.

The stand-in (tests/fixtures/primus-standin) prints every argument it receives and what
Primus's parser would end with for the tracker switches (the experiment YAML, then the
overrides after it). Container forms run on Docker; see also test_launcher_modes.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid

import pytest

from engine_fixtures import assert_no_leak
from primus_standin import TRAIN, Space, seen, space, standin_image  # noqa: F401 - fixtures

pytestmark = [pytest.mark.docker]


def effective(output: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        if line.startswith("standin-effective: "):
            key, _, value = line[len("standin-effective: "):].partition("=")
            found[key] = value
    return found


def test_experiment_that_enables_wandb_keeps_it_without_tracker_settings(space: Space):
    """No trackers: in .primus.yaml: the experiment's own `disable_wandb: false` is what Primus ends with
    (the runner used to append --disable_wandb=true and three more built-in defaults)."""
    (space.checkout / "exp.yaml").write_text("modules:\n  pre_trainer:\n    overrides:\n      disable_wandb: false\n"
                                             "      enable_one_logger: false\n")
    result = space.run("container", "--", "train", "pretrain", "--config", "exp.yaml", env={"PRIMUS_PATH": str(space.checkout)})
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["args"] == ["train", "pretrain", "--config", "exp.yaml"]  # nothing appended
    assert effective(result.stdout) == {"disable_tensorboard": "unset", "disable_wandb": "false", "disable_mlflow": "unset",
                                        "enable_one_logger": "false"}


def test_a_tracker_key_in_the_config_file_is_appended_and_wins(space: Space):
    (space.checkout / "exp.yaml").write_text("disable_wandb: false\n")
    space.config.write_text(space.config.read_text() + "trackers:\n  disable_wandb: true\n")
    result = space.run("container", "--", "train", "pretrain", "--config", "exp.yaml", env={"PRIMUS_PATH": str(space.checkout)})
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["args"][4:] == ["--disable_wandb=true"]
    assert effective(result.stdout)["disable_wandb"] == "true"
    plan = space.run("--json", "plan", "--", "train", "pretrain", "--config", "exp.yaml", env={"PRIMUS_PATH": str(space.checkout)})
    sources = json.loads(plan.stdout)["trackers"]["override_sources"]
    line = next(n for n, text in enumerate(space.config.read_text().splitlines(), 1) if "disable_wandb" in text)
    assert sources == [{"override": "--disable_wandb=true", "from": f"{space.config}:{line}"}]


def test_a_second_mount_of_the_checkout_keeps_its_own_mount(space: Space):
    """`container --volume <checkout>:/data -- train …` inside a checkout: the checkout stays mounted at its
    own path (the job found no runner/primus-cli-direct.sh when /data replaced it) and /data is there too."""
    checkout = str(space.checkout)
    plan = space.run("--json", "container", "--dry-run", "--volume", f"{checkout}:/data", "--", *TRAIN, env={"PRIMUS_PATH": str(space.checkout)})
    assert plan.returncode == 0, plan.stderr
    mounts = {(m["source"], m["target"]) for m in json.loads(plan.stdout)["mounts"]}
    assert {(checkout, "/data"), (checkout, checkout)} <= mounts
    # the entry checks /data first, then runs the checkout's direct launcher as the default entry does
    entry = space.root / "entry.yaml"
    entry.write_text("container:\n  entry: [sh, -c, 'test -f /data/runner/primus-cli-direct.sh && exec bash "
                     "runner/primus-cli-direct.sh \"$@\"', sh]\n")
    result = space.run("--config", str(entry), "container", "--volume", f"{checkout}:/data", "--", *TRAIN, env={"PRIMUS_PATH": str(space.checkout)})
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["path"] == "runner/primus-cli-direct.sh" and got["pwd"] == checkout


# --------------------------------------------------------------------------- docker run options, Docker and Podman

PROBE = ("echo host=$(hostname); grep 'Max open files' /proc/self/limits; echo pids=$(cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max);"
         " grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; echo groups=$(id -G); echo somaxconn=$(cat /proc/sys/net/core/somaxconn);"
         " echo args=\"$*\"")


def probe_space(tmp_path, canary, busybox_image, engine_host) -> Space:
    entry = json.dumps(["sh", "-c", PROBE, "sh"])
    config = f"container:\n  gpu: none\n  stop_timeout: 2\n  entry: {entry}\n  options:\n    image: {busybox_image}\n"
    space = Space(tmp_path, canary, config=config)
    space.env.update(engine_host.env)
    return space


def probed(output: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        if line.startswith("Max open files"):
            found["nofile"] = " ".join(line.split()[3:5])
        elif re.match(r"^(CapEff|NoNewPrivs):", line):
            key, value = line.split(":", 1)
            found[key] = value.strip()
        elif "=" in line and line.split("=", 1)[0] in ("host", "pids", "groups", "somaxconn", "args"):
            key, value = line.split("=", 1)
            found[key] = value
    return found


def test_the_launchers_docker_options_reach_the_container(tmp_path, canary, busybox_image, engine_host):
    """`container --hostname … --ulimit … --cap-add … --security-opt … --group-add … --pids-limit … --sysctl …`:
    modelled ones onto the typed config, the others passed through, every form (--NAME VALUE, --NAME=VALUE, boolean)."""
    space = probe_space(tmp_path, canary, busybox_image, engine_host)
    # This host's rootful Podman (itself in a container) may not raise rlimits: `podman run --ulimit` fails here too.
    ulimit = ["--ulimit=nofile=1024:2048"] if engine_host.kind == "docker" else []
    result = space.run("container", "--hostname", "launcher-h1", *ulimit, "--cap-add", "NET_ADMIN",
                       "--security-opt", "no-new-privileges", "--group-add", "4242", "--pids-limit", "321",
                       "--network", "none", "--sysctl", "net.core.somaxconn=999", "--rm", "--", "train", "pretrain")
    assert result.returncode == 0, result.stderr
    got = probed(result.stdout)
    assert got["host"] == "launcher-h1" and got["pids"] == "321"
    assert got["nofile"] == "1024 2048" or not ulimit
    assert got["NoNewPrivs"] == "1" and "4242" in got["groups"].split() and got["somaxconn"] == "999"
    assert int(got["CapEff"], 16) & (1 << 12)  # CAP_NET_ADMIN
    assert got["args"] == "train pretrain"  # container.entry + the Primus args
    assert "--rm: the runner always removes its container" in result.stderr

    dry = space.run("--json", "--dry-run", "container", "--privileged", "--network", "none", "--", "x")
    assert json.loads(dry.stdout)["request"]["create"]["HostConfig"]["Privileged"] is True
    privileged = space.run("container", "--privileged", "--network", "none", "--", "x")
    if privileged.returncode == 0:
        assert int(probed(privileged.stdout)["CapEff"], 16) >= (1 << 38) - 1  # every capability
    else:  # this host's Docker (itself in a container) refuses privileged mode: the engine's own refusal, said
        assert privileged.returncode == 3 and "refuses privileged mode" in privileged.stderr, privileged.stderr


def test_an_option_that_would_show_a_secret_is_refused(tmp_path, canary, busybox_image, engine_host):
    """A secret value in a passed-through option would be in `docker inspect`: refused before the container exists."""
    space = probe_space(tmp_path, canary, busybox_image, engine_host)
    result = space.run("container", "--label", f"note={canary['HF_TOKEN']}", "--env", "HF_TOKEN", "--", "x")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "docker inspect" in result.stderr
    assert_no_leak((result.stdout + result.stderr).encode(), canary, "refused label")
    result = space.run("container", "--tty", "--", "x")
    assert result.returncode == 2 and "leave out" in result.stderr and "primus-runner shell" in result.stderr, result.stderr


# --------------------------------------------------------------------------- direct


def test_direct_hands_its_options_to_the_direct_launcher_unchanged(space: Space):
    """`direct --silent -- node_smoke --tier2-perf` (the direct launcher's own option, refused before) and
    `direct --dry-run -- …` (the direct launcher's own dry run: the stand-in is run with --dry-run)."""
    env = {"PRIMUS_PATH": str(space.checkout)}
    result = space.run("direct", "--silent", "--log_file", "l.log", "--env", "LIT=1", "--", "node_smoke", "--tier2-perf", env=env)
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["path"].endswith("runner/primus-cli-direct.sh")
    assert got["args"] == ["--silent", "--log_file", "l.log", "--", "node_smoke", "--tier2-perf"]
    assert got["env"]["LIT"] == "1"
    result = space.run("direct", "--dry-run", "--", *TRAIN, env=env)
    assert result.returncode == 0, result.stderr
    (got,) = seen(result.stdout).values()
    assert got["args"] == ["--dry-run", "--", *TRAIN]
    result = space.run("--dry-run", "direct", "--silent", "--", *TRAIN, env=env)  # the runner's own dry run: nothing runs
    assert result.returncode == 0 and not seen(result.stdout), result.stdout


# --------------------------------------------------------------------------- slurm


def _wait(space: Space, job_id: str) -> dict:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        state = json.loads(space.run("--json", "status", job_id).stdout)
        if state["exit_code"] is not None:
            return state
        time.sleep(1)
    raise AssertionError(f"job {job_id} did not end")


@pytest.mark.slurm
def test_slurm_flags_reach_sbatch_as_given_and_the_output_goes_where_the_user_said(space: Space, slurm_cluster):
    """`slurm sbatch -J NAME --exclusive --cpus-per-task=1 -o run-%j.log -e err.log --mail-type END --mail-user …
    -- container --debug -- train …`: Slurm has each flag; the job's rank-labelled, masked output is in run-<job>.log
    where the user said, and `logs JOB` still finds it."""
    name = f"launcher-{uuid.uuid4().hex[:6]}"
    flags = ["-N", "2", "-J", name, "--exclusive", "--cpus-per-task=1", "-o", "run-%j.log", "-e", "err.log",
             "--mail-type", "END", "--mail-user=nobody@example.com", "--comment", "launcher-flags"]
    entry = ["--", "container", "--debug", "--env", "HF_TOKEN", "--", *TRAIN]
    dry = space.run("--json", "--dry-run", "slurm", "sbatch", *flags, *entry)
    assert json.loads(dry.stdout)["request"]["sbatch"][4:-1] == flags  # exactly as given (this partition forces sharing)
    result = space.run("--json", "slurm", "sbatch", *flags, *entry)
    assert result.returncode == 0, result.stderr
    job_id = json.loads(result.stdout)["job_id"]
    shown = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True).stdout
    assert f"JobName={name}" in shown and "MailType=END" in shown and "Comment=launcher-flags" in shown
    assert "MailUser=nobody@example.com" in shown
    assert _wait(space, job_id)["exit_code"] == 0
    log = space.project / f"run-{job_id}.log"
    text = log.read_text()
    ranks = seen("\n".join(re.sub(r"^(\d+): ", r"[\1] ", line) for line in text.splitlines()))
    assert set(ranks) == {"0", "1"}, text
    for got in ranks.values():
        assert got["env"]["PRIMUS_LOG_LEVEL"] == "DEBUG" and got["env"]["HF_TOKEN"] == "***"
    assert (space.project / "err.log").exists()
    assert_no_leak(text.encode(), space.canary, "the user's -o file")
    logs = space.run("logs", job_id)
    assert logs.returncode == 0 and "standin-arg" in logs.stdout, logs.stderr


@pytest.mark.slurm
def test_slurm_config_keys_map_to_flags_and_a_flag_beats_its_key(space: Space, slurm_cluster):
    """The launcher's slurm: keys (job-name, partition, time …) become sbatch options; -J/-t on the command line win."""
    space.config.write_text(space.config.read_text() + "  job-name: from-config\n  cpus-per-task: 1\n")
    result = space.run("--json", "--dry-run", "slurm", "sbatch", "-N", "2", "-t", "7", "--", *TRAIN)
    assert result.returncode == 0, result.stderr
    request = json.loads(result.stdout)["request"]
    assert "#SBATCH --job-name=from-config" in request["script"] and "#SBATCH --cpus-per-task=1" in request["script"]
    assert "#SBATCH --time=" not in request["script"] and request["sbatch"][4:-1] == ["-N", "2", "-t", "7"]
    result = space.run("--json", "slurm", "sbatch", "-N", "2", "-J", "from-flag", "--", *TRAIN)
    assert result.returncode == 0, result.stderr
    job_id = json.loads(result.stdout)["job_id"]
    shown = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True).stdout
    assert "JobName=from-flag" in shown and "NumCPUs=" in shown
    assert _wait(space, job_id)["exit_code"] == 0


@pytest.mark.slurm
def test_slurm_direct_entry_runs_the_direct_launcher_on_each_node(space: Space, slurm_cluster):
    """`slurm srun -N 2 --ntasks-per-node=1 -- direct -- node_smoke` (preflight without a container): each node runs
    the checkout's direct launcher on its host, with NNODES/NODE_RANK/MASTER_ADDR and the user's environment (as srun
    gives the launcher's), no job-cache variable of a container's (a host process has no such mount)."""
    result = space.run("--config", str(space.config), "slurm", "srun", "-N", "2", "--ntasks-per-node=1", "--",
                       "direct", "--silent", "--env", "LIT=7", "--", "node_smoke", "--tier2-perf", cwd=space.checkout)
    assert result.returncode == 0, result.stderr
    ranks = seen(result.stdout)
    assert set(ranks) == {"0", "1"}, result.stdout + result.stderr
    for rank, got in ranks.items():
        assert got["path"] == str(space.checkout / "runner" / "primus-cli-direct.sh")
        assert got["args"] == ["--silent", "--", "node_smoke", "--tier2-perf"]
        assert got["env"]["NODE_RANK"] == rank and got["env"]["NNODES"] == "2" and got["env"]["LIT"] == "7"
        assert got["env"]["HF_TOKEN"] == "***" and got["env"]["HOST_ONLY"] == "host-only-value-q81z"
        assert not any(value.startswith("/primus-runner/") for value in got["env"].values())
    assert_no_leak((result.stdout + result.stderr).encode(), space.canary, "slurm direct")
