"""Engines that die under the runner: a Docker daemon killed mid-run, a Slurm controller that
does not answer. Neither touches the shared engines: the daemon is a private dockerd started
for this module, the controller is "down" through a copy of slurm.conf pointing at a closed port.

Each fault: exit 1 (the engine became unavailable, per the contract), one clear message,
no traceback, no partial state files, no orphan container, no secret in anything printed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from docker_helpers import BUSYBOX, LABEL_JOB, Workspace, read_until, unique
from engine_fixtures import assert_no_leak, engine_missing, free_port
from runs_helpers import slurm_job_dirs

MARKER = re.compile(r"^[0-9a-f]{64}$")  # config-validity cache markers (empty files named by a hash)


def partial_state(ws: Workspace) -> list[str]:
    """Files under HOME/XDG_CACHE_HOME other than the complete (empty) digests of known-valid config (runner.config.known_valid), complete
    parse-cache entries (whole JSON documents; a left-over ``.tmp`` counts as partial) and the
    run store (every launch's record, checked complete by ``final_states``)."""
    bad = []
    store = ws.home / ".local" / "state" / "primus-runner"
    for base in (ws.home, ws.cache):
        for path in base.rglob("*"):
            if path.is_dir() or path.is_relative_to(store):
                continue
            marker = path.parent.name == "valid-config" and MARKER.match(path.name) and path.stat().st_size == 0
            if not marker and not _complete_parse(path):
                bad.append(str(path))
    return bad


def _complete_parse(path: Path) -> bool:
    if path.parent.name != "parsed" or path.suffix == ".tmp":
        return False
    try:
        return "format" in json.loads(path.read_bytes())
    except ValueError:
        return False


def final_states(ws: Workspace) -> list[str]:
    """The state of every recorded run (none may still say running)."""
    listed = ws.run("runs", "--json", timeout=60)
    assert listed.returncode == 0, listed.stderr.decode()
    return [run["state"] for run in json.loads(listed.stdout)]


# ------------------------------------------------------------------ a private dockerd
class PrivateDockerd:
    """A second dockerd with its own socket, data-root, exec-root (so its own managed
    containerd socket and state), its own bridge and no iptables rules: killing it cannot
    hurt the shared daemon other tests use.

    Not ``--bridge none``: a daemon started that way deletes the host's ``docker0`` link,
    which the shared daemon's bridge network needs.
    """

    def __init__(self, root: Path):
        self.root = root
        self.sock = root / "docker.sock"
        self.host = f"unix://{self.sock}"
        self.data = root / "data"
        self.exec_root = root / "exec"
        self.proc: subprocess.Popen | None = None
        self.bridge = f"pf-{secrets.token_hex(4)}"  # interface names stop at 15 bytes
        (root / "daemon.json").write_text("{}\n")  # never read the host's /etc/docker/daemon.json

    def start(self, timeout: float = 60) -> None:
        if not Path(f"/sys/class/net/{self.bridge}").exists():
            self._add_bridge()
        log = open(self.root / "dockerd.log", "ab")
        self.proc = subprocess.Popen(
            ["dockerd", "--host", self.host, "--data-root", str(self.data), "--exec-root", str(self.exec_root),
             "--pidfile", str(self.root / "docker.pid"), "--config-file", str(self.root / "daemon.json"),
             "--bridge", self.bridge, "--iptables=false", "--ip6tables=false", "--ip-masq=false"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:  # the socket accepts before the daemon serves (it restores containers first)
                if self.docker("version", timeout=10).returncode == 0:
                    return
            except subprocess.TimeoutExpired:
                continue
            time.sleep(0.2)
        tail = (self.root / "dockerd.log").read_text(errors="replace")[-2000:]
        self.kill()
        engine_missing("a private dockerd", f"it did not answer within {timeout:.0f} s: {tail}")

    def docker(self, *args: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", "-H", self.host, *args], capture_output=True, timeout=timeout, **kw)

    def kill(self) -> None:
        """SIGKILL dockerd and its managed containerd (one process group); the shims live on."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)
        self.proc = None
        # The killed containerd can linger as a zombie (PID 1 here may not reap it); its pidfile
        # would make the next dockerd wait for it forever instead of starting a fresh one.
        (self.exec_root / "containerd" / "containerd.pid").unlink(missing_ok=True)

    def stop(self) -> None:
        """SIGTERM first (dockerd stops its containers), then SIGKILL."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def leftover_pids(self) -> list[int]:
        """Processes this daemon started that outlive it (containerd shims name its exec-root)."""
        pids = []
        needle = str(self.exec_root).encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if needle in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
        return pids

    def _add_bridge(self) -> None:
        if shutil.which("ip") is None:
            engine_missing("a private dockerd", "needs `ip` (iproute2) to create its own bridge")
        taken = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, timeout=10).stdout
        net = next(f"10.253.{n}" for n in range(1, 255) if f" 10.253.{n}." not in taken)
        for cmd in (["link", "add", self.bridge, "type", "bridge"], ["addr", "add", f"{net}.1/24", "dev", self.bridge],
                    ["link", "set", self.bridge, "up"]):
            done = subprocess.run(["ip", *cmd], capture_output=True, text=True, timeout=10)
            if done.returncode != 0:
                engine_missing("a private dockerd", f"cannot create its bridge: ip {' '.join(cmd)}: {done.stderr}")

    def destroy(self) -> None:
        self.stop()
        for pid in self.leftover_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
        for target in sorted((m for m in mounts if m.startswith(str(self.root) + "/")), key=len, reverse=True):
            subprocess.run(["umount", "-l", target], capture_output=True, timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)
        if Path(f"/sys/class/net/{self.bridge}").exists():
            subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True, timeout=10)


@pytest.fixture(scope="module")
def private_dockerd(docker_client, busybox_image):
    if shutil.which("dockerd") is None:
        engine_missing("dockerd", "not on PATH")
    # Short path: a unix socket path must stay under 108 bytes.
    daemon = PrivateDockerd(Path(tempfile.mkdtemp(prefix="primus-dockerd-")))
    try:
        daemon.start()
        save = subprocess.Popen(["docker", "save", busybox_image], stdout=subprocess.PIPE)
        loaded = daemon.docker("load", stdin=save.stdout, timeout=120)
        save.stdout.close()
        assert save.wait(60) == 0 and loaded.returncode == 0, loaded.stderr.decode()
        yield daemon
    finally:
        daemon.destroy()


@pytest.mark.docker
def test_daemon_killed_mid_run(private_dockerd, tmp_path, canary):
    """dockerd dies under a running job: `up` ends promptly with exit 1 and says so; after the
    daemon comes back, `down --all` leaves no container and no shim behind."""
    daemon = private_dockerd
    ws = Workspace(tmp_path, canary)
    ws.env["DOCKER_HOST"] = daemon.host
    name = unique("orphan")
    proc = ws.popen("up", "--gpu", "none", "--image", BUSYBOX, "--network", "none", "--name", name,
                    "--", "sh", "-c", 'echo "started $HF_TOKEN"; sleep 30')
    try:
        first = read_until(proc, b"started")
        daemon.kill()
        rest, err = proc.communicate(timeout=60)  # ends once the daemon is gone (the job itself sleeps 30 s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    text = err.decode(errors="replace")
    assert proc.returncode == 1, text
    assert "Traceback" not in text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "went away" in errors[0] and name in errors[0], text
    assert f"primus-runner down {name}" in text, text  # says how to clean up
    assert partial_state(ws) == [], "partial state files left behind"
    assert final_states(ws) == ["unknown"], "the run's record must say its code is unknown (the daemon went away)"
    assert_no_leak(first + rest + err, canary, "up output")
    for path, data in ws.written_files().items():
        assert_no_leak(data, canary, path)

    daemon.start()  # same data-root: whatever survived the crash is visible again
    listed = ws.run("ps", timeout=60)
    assert listed.returncode == 0, listed.stderr.decode()
    down = ws.run("down", "--all", timeout=60)
    assert down.returncode == 0, down.stderr.decode()
    assert b"Traceback" not in listed.stderr + down.stderr
    left = daemon.docker("ps", "-aq", "--filter", f"label={LABEL_JOB}={name}").stdout.split()
    assert left == [], f"container {name} survived `down --all`"
    deadline = time.monotonic() + 30  # the job's shim exits once its container is gone
    shims = [pid for pid in daemon.leftover_pids() if b"shim" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    while shims and time.monotonic() < deadline:
        time.sleep(0.2)
        shims = [pid for pid in daemon.leftover_pids() if Path(f"/proc/{pid}").exists()
                 and b"shim" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert shims == [], f"containerd shims survived: {shims}"
    assert_no_leak(listed.stdout + listed.stderr + down.stdout + down.stderr, canary, "ps/down output")


# ------------------------------------------------------------------ slurmctld down
SLURM_CONFIG = f"""container:
  gpu: none
  options:
    image: {BUSYBOX}
    privileged: false
    ulimit: []
    group-add: []
    env: [HF_TOKEN, WANDB_API_KEY]
slurm:
  partition: debug
  nodes: 1
  time: "5"
"""


@pytest.fixture
def controller_down(tmp_path, slurm_cluster, canary) -> Workspace:
    """A workspace whose Slurm clients read a slurm.conf with the controller on a closed port."""
    source = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf"))
    keep = [line for line in source.read_text().splitlines()
            if not re.match(r"\s*(SlurmctldPort|TCPTimeout|MessageTimeout)\s*=", line, re.I)]
    # Short timeouts only make the clients give up in ~1 s instead of ~9 s; the failure is the same.
    keep += [f"SlurmctldPort={free_port()}", "TCPTimeout=1", "MessageTimeout=2"]
    conf = tmp_path / "slurm.conf"
    conf.write_text("\n".join(keep) + "\n")
    ws = Workspace(tmp_path / "ws", canary, SLURM_CONFIG)
    ws.env["SLURM_CONF"] = str(conf)
    probe = subprocess.run(["sinfo", "-h"], env=ws.env, capture_output=True, text=True, timeout=60)
    assert probe.returncode != 0 and "Unable to contact" in probe.stderr, probe.stderr  # the fault is real
    return ws


def _one_error(result: subprocess.CompletedProcess) -> str:
    text = result.stderr.decode(errors="replace")
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text
    return errors[0]


@pytest.mark.slurm
def test_slurmctld_down_check(controller_down, canary):
    result = controller_down.run("check", "--engine", "slurm", timeout=120)
    assert result.returncode == 1, result.stderr.decode()
    assert "slurmctld does not answer" in _one_error(result)
    assert_no_leak(result.stdout + result.stderr, canary, "check output")


@pytest.mark.slurm
def test_slurmctld_down_submit_leaves_nothing(controller_down, canary):
    ws = controller_down
    result = ws.run("submit", "--", "sh", "-c", 'echo "$HF_TOKEN"', timeout=120)
    assert result.returncode == 1, result.stderr.decode()
    error = _one_error(result)
    assert "slurmctld does not answer" in error and "not submitted" in error, error
    for runs in (ws.cwd / "primus-runs", *slurm_job_dirs(ws.home)):
        assert not runs.exists() or list(runs.iterdir()) == [], "a job directory (plan, script) was left behind"
    assert partial_state(ws) == [], "partial state files left behind"
    assert_no_leak(result.stdout + result.stderr, canary, "submit output")
    for path, data in ws.written_files().items():
        assert_no_leak(data, canary, path)


@pytest.mark.slurm
@pytest.mark.parametrize("command", ["status", "cancel"])
def test_slurmctld_down_status_and_cancel(controller_down, canary, command):
    result = controller_down.run(command, "123", timeout=120)
    assert result.returncode == 1, result.stderr.decode()
    assert "slurmctld does not answer" in _one_error(result)
    assert_no_leak(result.stdout + result.stderr, canary, f"{command} output")
