"""``submit`` of an image that exists only in the password-protected local registry
(``.ci/setup-registry.sh``): the login is checked on the submitting host (refused → exit 2,
nothing submitted), travels to the nodes by name in ``--export`` for the agents only, and
each node pulls before its container starts. The password is in no output, file, command
line or ``docker inspect``, and never in the container's environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from engine_fixtures import assert_no_leak
from registry_helpers import CmdlineWatch, docker_inspect, files_containing, remove_local, test_registry  # noqa: F401
from runs_helpers import slurm_job_files
from slurm_helpers import job_containers, job_dir, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

JOB = 'echo "rank $NODE_RANK ran key=${DOCKER_LOGIN_KEY:-unset} user=${DOCKER_LOGIN_USER:-unset}"; sleep 4'


def _project(tmp_path_factory, slurm_cluster, image: str, password: str, user: str, addr: str):
    work = tmp_path_factory.mktemp("slurm-pull")
    (work / ".primus.yaml").write_text(
        f"container:\n  options:\n    image: {image}\n    group-add: []\n    privileged: false\n    ulimit: \"nofile=1024:1024\"\n"
        f"slurm:\n  partition: {slurm_cluster.partition}\n  nodes: 2\n  time: \"5\"\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_LOGIN_")}
    env.update(HOME=str(work), DOCKER_LOGIN_USER=user, DOCKER_LOGIN_KEY=password, DOCKER_LOGIN_REGISTRY=addr, NO_COLOR="1")
    return work, env


@pytest.mark.parametrize("given_in", ["environment", "env file"])
def test_both_nodes_pull_the_private_image_with_the_forwarded_login(tmp_path_factory, slurm_cluster, docker_client, test_registry, given_in):
    image = test_registry.busybox
    remove_local(docker_client, image)  # only the registry has it
    work, env = _project(tmp_path_factory, slurm_cluster, image, test_registry.password, test_registry.user, test_registry.addr)
    env_file = []
    if given_in == "env file":  # the user's own --env-file: the request finds the login there, and launch hands it on
        login = {name: env.pop(name) for name in ("DOCKER_LOGIN_USER", "DOCKER_LOGIN_KEY", "DOCKER_LOGIN_REGISTRY")}
        (work / "login.env").write_text("".join(f"{name}={value}\n" for name, value in login.items()))
        (work / "login.env").chmod(0o600)
        env_file = ["--env-file", str(work / "login.env")]
    secret = [test_registry.password]
    try:
        with CmdlineWatch(secret) as watch:
            proc = subprocess.Popen([sys.executable, "-m", "runner", *env_file, "submit", "--gpu", "none", "--wait", "--", "sh", "-c", JOB],
                                    cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                def running():
                    outs = slurm_job_files(work, "slurm-*.out")
                    if not outs:
                        return None
                    found = job_containers(docker_client, outs[0].name[len("slurm-"):-len(".out")], running_only=True)
                    return found if len(found) == 2 else None

                for item in wait_until(running, 240, "both containers to run"):
                    assert_no_leak(json.dumps(docker_client.api.inspect_container(item["Id"])), secret, "docker inspect of a job container")
                stdout, stderr = proc.communicate(timeout=300)
            finally:
                if proc.poll() is None:
                    proc.kill()
        assert proc.returncode == 0, stdout + stderr
        assert watch.scans > 0 and not watch.hits, f"the password was on a command line: {watch.hits}"
        ran = sorted(line.split("] ", 1)[1] for line in stdout.splitlines() if " ran key=" in line)
        assert ran == ["rank 0 ran key=unset user=unset", "rank 1 ran key=unset user=unset"], stdout + stderr
        assert f"pulling {image}" in stdout + stderr, "a node pulled the image"
        assert_no_leak(stdout + stderr, secret, "submit's output")
        directory = job_dir(work)
        assert files_containing(directory, secret) == [], "the job's files"
        job_id = next(directory.glob("slurm-*.out")).name[len("slurm-"):-len(".out")]
        plan = json.loads((directory / "plan.json").read_text())
        assert plan["pull"] == "missing"
        assert "DOCKER_LOGIN_KEY" not in {e["name"] for e in plan["plan"]["env"]}, "the login is the agent's, not the container's"
        assert "DOCKER_LOGIN_KEY" in (directory / "job.sbatch").read_text(), "exported by name for the agents"
        shown = subprocess.run(["scontrol", "show", "job", "-d", job_id], capture_output=True, text=True, timeout=30)
        assert_no_leak(shown.stdout, secret, "scontrol show job")
        assert_no_leak(docker_inspect(image), secret, "docker image inspect")
        assert job_containers(docker_client, job_id) == []
    finally:
        remove_local(docker_client, image)


def test_a_refused_login_is_exit_2_before_anything_is_submitted(tmp_path_factory, slurm_cluster, docker_client, test_registry):
    wrong = "wrong-password-canary-51e0c7"
    work, env = _project(tmp_path_factory, slurm_cluster, test_registry.busybox, wrong, test_registry.user, test_registry.addr)
    done = subprocess.run([sys.executable, "-m", "runner", "submit", "--gpu", "none", "--", "true"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert test_registry.addr in done.stderr and "refused" in done.stderr
    assert_no_leak(done.stdout + done.stderr, [wrong, test_registry.password], "the refusal")
    assert not (work / "primus-runs").exists(), "nothing was written or submitted"
