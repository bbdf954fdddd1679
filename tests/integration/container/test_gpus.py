"""GPUs chosen and isolated, on real Docker and Podman with the fake GPU host, and on the
two-node Slurm cluster with gres over its render nodes.

The fake host (.ci/setup-fake-gpus.sh) has 8 AMD GPUs (renderD128-135, card1-8: card0 is a
BMC's, so cardN is not renderD(128+N)) and 4 NVIDIA entries; its device nodes are real
character devices, so what a container's /dev holds is what isolation is (opening them does
nothing: there is no driver). gres.conf gives n1 renderD128-131 and n2 renderD132-135.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from cli_runner import run_cli
from engine_fixtures import PYTHON_IMAGE, engine_missing
from gpu_tree import FAKE_ROOT, SETUP_FAKE_GPUS, amd_uuid, write_tree

SPEC = "/etc/cdi/primus-fake-nvidia.json"  # written by .ci/setup-fake-gpus.sh

pytestmark = [pytest.mark.docker]

# The Debian image has the video group the ROCm flavor adds (busybox has none).
CONFIG = """\
container:
  gpu: rocm
  stop_timeout: 1
  options:
    image: {image}
    privileged: false
"""
# Inside the container: each device node with its major:minor, one per line.
LIST_DEVICES = 'for f in /dev/kfd /dev/dri/*; do [ -e "$f" ] && echo "$f $(stat -c %t:%T "$f")"; done'


@pytest.fixture(scope="module")
def fake_host() -> Path:
    if not (FAKE_ROOT / "dev/kfd").is_char_device() or not (FAKE_ROOT / "sys/class/kfd/kfd/topology/nodes").is_dir():
        engine_missing("the fake GPU host", f"{FAKE_ROOT} is not set up", SETUP_FAKE_GPUS)
    return FAKE_ROOT


@pytest.fixture
def project(tmp_path, fake_host, engine_host):
    image = PYTHON_IMAGE if engine_host.kind == "docker" else f"localhost/{PYTHON_IMAGE}"
    (tmp_path / ".primus.yaml").write_text(CONFIG.format(image=image))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_VISIBLE_DEVICES")}
    env.update(engine_host.env, HOME=str(tmp_path), PRIMUS_RUNNER_HOST_ROOT=str(fake_host),
               PRIMUS_RUNNER_GPU_LEASES=str(tmp_path / "leases"), PRIMUS_RUNNER_TRUST_PROJECT="1")
    names: list[str] = []
    yield tmp_path, env, names
    if names:
        subprocess.run([*engine_host.cli, "rm", "-f", *names], capture_output=True, timeout=120)


def runner(project, *args, timeout=180):
    work, env, _ = project
    return run_cli(work, *args, env=env, timeout=timeout)


def start(project, gpus: str, tag: str) -> str:
    """A detached job holding ``gpus`` until it is removed."""
    name = f"gpus-test-{tag}-{uuid.uuid4().hex[:6]}"
    project[2].append(name)
    result = runner(project, "up", "--detach", "--name", name, "--gpus", gpus, "--", "sleep", "300")
    assert result.returncode == 0, result.stderr
    return name


def devices_in(engine_host, name: str) -> dict[str, str]:
    out = subprocess.run([*engine_host.cli, "exec", name, "sh", "-c", LIST_DEVICES], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return dict(line.split() for line in out.stdout.splitlines())


def expected(gpu_indices) -> dict[str, str]:
    """/dev/kfd (236:0) plus each GPU's render node (226:128+i) and card node (226:i+1), hex as stat prints them."""
    nodes = {"/dev/kfd": "ec:0"}
    for i in gpu_indices:
        nodes[f"/dev/dri/renderD{128 + i}"] = f"e2:{128 + i:x}"
        nodes[f"/dev/dri/card{i + 1}"] = f"e2:{i + 1:x}"
    return nodes


def label_gpus(engine_host, name: str) -> list[str]:
    out = subprocess.run([*engine_host.cli, "inspect", name], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)[0]["Config"]["Labels"]["io.primus-runner.gpus"].split(",")


def test_two_jobs_on_0_3_and_4_7_side_by_side_each_see_only_their_own_nodes(project, engine_host):
    first = start(project, "0-3", "a")
    second = start(project, "4-7", "b")
    assert devices_in(engine_host, first) == expected(range(0, 4))
    assert devices_in(engine_host, second) == expected(range(4, 8))
    assert label_gpus(engine_host, second) == [amd_uuid(i) for i in range(4, 8)]
    # the GPUs inside are numbered from 0: no host index in the visible-devices variables
    env = subprocess.run([*engine_host.cli, "exec", second, "env"], capture_output=True, text=True, timeout=60).stdout
    assert "GPUS_PER_NODE=4" in env.splitlines()
    assert not [line for line in env.splitlines() if "_VISIBLE_DEVICES=" in line]
    # a list that overlaps a running job's GPUs is refused, naming it; nothing is started
    taken = runner(project, "up", "--detach", "--name", f"gpus-test-c-{uuid.uuid4().hex[:6]}", "--gpus", "3-4", "--", "true")
    assert taken.returncode == 2 and f"GPU 3 is held by container {first}" in taken.stderr, taken.stderr


def test_gpus_2_twice_gets_disjoint_gpus_and_a_third_ask_names_the_holders(project, engine_host):
    first = start(project, "2", "n1")
    second = start(project, "2", "n2")
    a, b = set(label_gpus(engine_host, first)), set(label_gpus(engine_host, second))
    assert len(a) == len(b) == 2 and not a & b
    seen_a, seen_b = devices_in(engine_host, first), devices_in(engine_host, second)
    assert len(seen_a) == len(seen_b) == 5 and set(seen_a) & set(seen_b) == {"/dev/kfd"}
    # 4 of 8 are held: asking for 5 exits 2 before anything starts and names both holders
    more = runner(project, "up", "--detach", "--name", f"gpus-test-x-{uuid.uuid4().hex[:6]}", "--gpus", "5", "--", "true")
    assert more.returncode == 2 and "only 4 of 8 rocm GPUs are free" in more.stderr
    assert first in more.stderr and second in more.stderr


@pytest.mark.engines("docker")
def test_racing_launches_never_share_a_gpu(project, engine_host):
    """Four launches of --gpus 2 at once on 8 GPUs: each gets its own two."""
    work, env, names = project
    tags = [f"gpus-test-r{i}-{uuid.uuid4().hex[:6]}" for i in range(4)]
    names += tags
    procs = [subprocess.Popen([sys.executable, "-m", "runner", "up", "--detach", "--name", t, "--gpus", "2", "--", "sleep", "300"],
                              cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for t in tags]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    held = [g for t in tags for g in label_gpus(engine_host, t)]
    assert sorted(held) == sorted(amd_uuid(i) for i in range(8))


def test_the_cuda_request_names_exactly_the_chosen_devices(project, engine_host, monkeypatch):
    result = runner(project, "--json", "up", "--dry-run", "--gpu", "cuda", "--gpus", "1,3", "--", "true")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [(g["index"], g["device_id"]) for g in doc["gpus"]] == [(1, "1"), (3, "3")]
    if engine_host.kind == "docker":
        # The runner's own request, created (not started: no NVIDIA toolkit here) on the real daemon.
        from runner.clients.engine_api import Engine
        from runner.engines.docker.request import make_request, resolve
        from runner.options import LaunchFlags, Sources
        from runner.session.prepare import prepare
        from runner.ui import Output

        work, env, names = project
        monkeypatch.chdir(work)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        plan = prepare(Output(color=False), Sources(), ["true"], LaunchFlags(gpu="cuda", gpus="1,3"), quiet=True).plan
        eng = Engine(host=engine_host.host)
        request = resolve(make_request(plan, {}), eng, None)
        name = f"gpus-test-cuda-{uuid.uuid4().hex[:6]}"
        names.append(name)
        eng.create(name, request.config)
        assert [r["DeviceIDs"] for r in eng.inspect(name)["HostConfig"]["DeviceRequests"]] == [["1", "3"]]
        eng.remove(name)  # it holds GPUs 1 and 3 while it exists
        assert "--gpus device=1,3" in runner(project, "up", "--dry-run", "--gpu", "cuda", "--gpus", "1,3", "--", "true").stdout
        up = runner(project, "up", "--gpu", "cuda", "--gpus", "1,3", "--", "true")  # refused at start, with the fix
        assert up.returncode == 3 and "nvidia-container-toolkit" in up.stderr, up.stderr
    else:
        dry = runner(project, "up", "--dry-run", "--gpu", "cuda", "--gpus", "1,3", "--", "true").stdout
        assert "--device nvidia.com/gpu=1 \\\n  --device nvidia.com/gpu=3" in dry and "--gpus" not in dry, dry


# The fake NVIDIA GPUs' device minors are not their indices: GPU i is /dev/nvidia{NVIDIA_MINORS[i]}.
NVIDIA_MINORS = (2, 3, 0, 1)


@pytest.mark.engines("podman")
def test_cuda_on_podman_runs_with_exactly_the_chosen_gpus_through_cdi(project):
    """The CDI spec .ci/setup-fake-gpus.sh writes (/etc/cdi) maps nvidia.com/gpu=N to the fake
    tree's /dev/nvidia<minor> plus nvidiactl; the job's /dev holds exactly GPUs 1 and 3's nodes."""
    if not Path(SPEC).is_file():
        engine_missing("the fake NVIDIA CDI spec", f"{SPEC} is missing", SETUP_FAKE_GPUS)
    up = runner(project, "up", "--gpu", "cuda", "--gpus", "1,3", "--", "ls", "-l", "/dev")
    assert up.returncode == 0, up.stderr
    nodes = {line.split()[-1]: line.split()[4] + line.split()[5] for line in up.stdout.splitlines()
             if line.startswith("c") and line.split()[-1].startswith("nvidia")}
    minors = [NVIDIA_MINORS[1], NVIDIA_MINORS[3]]
    assert nodes == {**{f"nvidia{m}": f"195,{m}" for m in minors}, "nvidiactl": "195,255"}, up.stdout
    # A device no spec names: refused before anything starts, with the fix.
    work, env, _ = project
    six = write_tree(work / "six", amd=0, nvidia=6)  # files only: for CUDA the runner reads no device node
    bare = dict(env, PRIMUS_RUNNER_HOST_ROOT=str(six))
    refused = subprocess.run([sys.executable, "-m", "runner", "up", "--gpu", "cuda", "--gpus", "1,5", "--", "true"], cwd=work,
                             env=bare, capture_output=True, text=True, timeout=180)
    assert refused.returncode == 1 and "no CDI spec" in refused.stderr and "nvidia-ctk cdi generate" in refused.stderr, refused.stderr
    assert "names nvidia.com/gpu=5:" in refused.stderr and "--device nvidia.com/gpu=1 --device nvidia.com/gpu=5" in refused.stderr


@pytest.mark.engines("docker")
def test_check_fails_for_a_flavor_whose_devices_are_absent_on_this_machine(project):
    work, env, _ = project
    bare = {k: v for k, v in env.items() if k != "PRIMUS_RUNNER_HOST_ROOT"}  # this machine's own /sys: no GPU at all
    for flavor in ("cuda", "rocm"):
        result = subprocess.run([sys.executable, "-m", "runner", "check", "--gpu", flavor], cwd=work, env=bare,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2 and f"no {flavor} GPU on this host" in result.stderr, result.stderr
    ok = runner(project, "check", "--gpu", "rocm")
    assert "gpu 4: /dev/dri/renderD132" in ok.stderr and f"no rocm GPU" not in ok.stderr


# ------------------------------------------------------------------ slurm

SLURM_CONFIG = CONFIG + """\
    volume: ["{sync}:/sync"]
slurm:
  partition: {partition}
  nodes: 2
  time: "5"
"""
# Each rank says it started, waits until all four ranks of both jobs have (so the jobs surely
# share the nodes at the same time), then lists its devices.
SLURM_JOB = ('touch /sync/$TAG-$NODE_RANK; until [ "$(ls /sync | wc -l)" -ge 4 ]; do sleep 0.2; done; '
             'echo "devices $TAG $NODE_RANK $GPUS_PER_NODE $(ls /dev/dri | tr "\\n" " ")"')


@pytest.mark.slurm
@pytest.mark.engines("docker")
def test_two_slurm_jobs_sharing_both_nodes_see_only_their_allocated_devices(tmp_path_factory, slurm_cluster, fake_host, engine_host):
    work = tmp_path_factory.mktemp("gpus-slurm")
    sync = work / "sync"
    sync.mkdir()
    (work / ".primus.yaml").write_text(SLURM_CONFIG.format(image=PYTHON_IMAGE, sync=sync, partition=slurm_cluster.partition))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_VISIBLE_DEVICES")}
    env.update(HOME=str(work), PRIMUS_RUNNER_HOST_ROOT=str(fake_host), PRIMUS_RUNNER_TRUST_PROJECT="1")
    procs = [subprocess.Popen([sys.executable, "-m", "runner", "submit", "--wait", "--gpus", "2", "--env", f"TAG={tag}",
                               "--", "sh", "-c", SLURM_JOB], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for tag in ("A", "B")]
    lines = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        lines += [line.split("devices ", 1)[1].split() for line in (out + err).splitlines() if "devices " in line]
    seen = {(tag, int(rank)): (count, set(nodes)) for tag, rank, count, *nodes in lines}
    assert sorted(seen) == [("A", 0), ("A", 1), ("B", 0), ("B", 1)], lines
    # n1's gres GPUs are renderD128-131, n2's renderD132-135 (GPUs 0-3 and 4-7 of the host)
    node_gpus = {0: range(0, 4), 1: range(4, 8)}
    for rank, gpus in node_gpus.items():
        a, b = seen[("A", rank)][1], seen[("B", rank)][1]
        assert len(a) == len(b) == 4 and not a & b, (rank, a, b)  # 2 GPUs each: render + card nodes
        allowed = {f"renderD{128 + i}" for i in gpus} | {f"card{i + 1}" for i in gpus}
        assert a | b == allowed, (rank, a, b)
        assert seen[("A", rank)][0] == seen[("B", rank)][0] == "2"
