"""Running the real `primus-runner` CLI against the real daemon, from a scratch directory.

Each test gets its own working directory with a small `.primus.yaml` (so the
repository's file does not interfere), its own HOME and XDG_CACHE_HOME (so every
file the runner writes can be scanned), and unique container names.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

BUSYBOX = "primus-test/busybox:latest"
LABEL = "io.primus-runner.managed"
LABEL_JOB = "io.primus-runner.job"

# Things this sandboxed dockerd refuses (privileged, a raised nofile ulimit, a
# `video` group busybox lacks) are switched off; everything else is the default.
CONFIG = """container:
  gpu: none
  stop_timeout: 2
  options:
    image: primus-test/busybox:latest
    privileged: false
    ulimit: []
    group-add: []
    env:
      - WANDB_API_KEY
      - HF_TOKEN
      - DATABRICKS_TOKEN
      - MLFLOW_TRACKING_PASSWORD
      - MLFLOW_TRACKING_TOKEN
      - ALLOWED_VAR
      - UNSET_VAR
      - "LITERAL_VAR=literal value"
passthrough:
  deny: [NCCL_DENIED_VAR]
"""

# The host's own tracker settings: a tracker test keeps only the canaries it gave and what it sets itself.
TRACKER_PREFIXES = ("MLFLOW_", "WANDB_", "DATABRICKS_")


def tracker_config(trackers: str, image: str | None = None) -> str:
    """A config whose job reaches the host's tracker servers on loopback (host network), with ``trackers``
    (YAML lines indented under ``trackers:``) after ``framework: generic``."""
    image_line = f"    image: {image}\n" if image else ""
    return ("container:\n  gpu: none\n  stop_timeout: 2\n  options:\n" + image_line
            + "    privileged: false\n    ulimit: []\n    group-add: []\n    network: host\n"
            + "trackers:\n  framework: generic\n" + trackers)


RUNNER = [shutil.which("primus-runner") or sys.executable, *([] if shutil.which("primus-runner") else ["-m", "runner"])]


def unique(prefix: str = "pt") -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


class Workspace:
    def __init__(self, root: Path, canary: dict[str, str] | None = None, config: str = CONFIG, trusted: bool = True):
        self.root = root
        self.cwd = root / "project"
        self.home = root / "home"
        self.cache = root / "cache"
        for d in (self.cwd, self.home, self.cache):
            d.mkdir(parents=True, exist_ok=True)
        (self.cwd / ".primus.yaml").write_text(config)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "NCCL_", "RCCL_", "GLOO_", "IONIC_", "HIPBLASLT_"))}
        for name in ("HF_TOKEN", "WANDB_API_KEY", "DATABRICKS_TOKEN", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN", "UNSET_VAR", "DOCKER_HOST"):
            self.env.pop(name, None)
        self.env.update(HOME=str(self.home), XDG_CACHE_HOME=str(self.cache), NO_COLOR="1")
        if trusted:  # the test wrote this project file itself: it is the user's, as in a pipeline
            self.env["PRIMUS_RUNNER_TRUST_PROJECT"] = "1"
        self.canary = dict(canary or {})
        self.env.update(self.canary)

    def without_host_trackers(self, *more_prefixes: str) -> "Workspace":
        """Drop the host's tracker settings (and variables starting with ``more_prefixes``) but the canaries."""
        for name in [k for k in self.env if k.startswith(TRACKER_PREFIXES + more_prefixes) and k not in self.canary]:
            self.env.pop(name)
        return self

    def argv(self, *args: str) -> list[str]:
        return [*RUNNER, *args]

    def run(self, *args: str, env: dict | None = None, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(*args), cwd=self.cwd, env={**self.env, **(env or {})}, capture_output=True, timeout=timeout, **kw)

    def popen(self, *args: str, **kw) -> subprocess.Popen:
        return subprocess.Popen(self.argv(*args), cwd=self.cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)

    def written_files(self) -> dict[str, bytes]:
        """Every file under the workspace except the config the test wrote."""
        found = {}
        for path in self.root.rglob("*"):
            if path.is_file() and path != self.cwd / ".primus.yaml":
                found[str(path)] = path.read_bytes()
        return found


def dotenv_workspace(root: Path, token: str, engine_host) -> Workspace:
    """A Workspace on ``engine_host`` whose one canary, HF_TOKEN=``token``, is in the project's .env only:
    not in the runner's environment, not in any argument (``ws.canary``; ``ws.cli`` inspects the engine)."""
    ws = Workspace(root)
    ws.env.update(engine_host.env)
    ws.canary = {"HF_TOKEN": token}
    (ws.cwd / ".env").write_text(f"HF_TOKEN={token}\n")
    ws.cli = engine_host.cli
    return ws


def container_pids(cid: str) -> set[int]:
    """The host pids of the container's processes (its id is in their cgroup path, Docker's and Podman's)."""
    pids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if cid in Path(f"/proc/{entry}/cgroup").read_text():
                    pids.add(int(entry))
            except OSError:
                pass
    return pids


def containers(label: str) -> list[str]:
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={label}"], capture_output=True, text=True, check=True).stdout
    return out.split()


def inspect(name: str) -> dict:
    return json.loads(subprocess.run(["docker", "inspect", name], capture_output=True, check=True).stdout)[0]


def force_remove(*names: str) -> None:
    subprocess.run(["docker", "rm", "-f", *names], capture_output=True)


def read_until(proc: subprocess.Popen, marker: bytes, timeout: float = 60) -> bytes:
    """The runner's stdout read up to (at least) ``marker``; the deadline holds even if the job prints nothing.
    The rest is left for ``proc.communicate()``."""
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    os.set_blocking(fd, False)
    try:
        while marker not in seen and time.monotonic() < deadline:
            try:
                piece = os.read(fd, 65536)
            except BlockingIOError:
                time.sleep(0.05)
                continue
            if not piece:  # end of file: the runner has closed its stdout
                break
            seen += piece
    finally:
        os.set_blocking(fd, True)
    assert marker in seen, f"the job never printed {marker!r} (runner exit {proc.poll()})"
    return seen
