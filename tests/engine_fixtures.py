"""Helpers for tests that use real engines (Docker, Slurm, an MLflow server)
and for checking that secret values never leak.

Engines are installed and started by ``bash .ci/setup-engines.sh``; the
fixtures in ``conftest.py`` only check that they are there (and start a
throw-away MLflow server). One rule for a missing engine, in
:func:`engine_missing`: under CI (``CI=true``) the test fails, elsewhere it is
skipped with a message saying how to start the engine.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

SETUP_HINT = "start the engines with: bash .ci/setup-engines.sh"

# Local images built by .ci/setup-engines.sh (no registry is reachable here).
BUSYBOX_IMAGE = "primus-test/busybox:latest"
PYTHON_IMAGE = "primus-test/python:bookworm"
NOSHELL_IMAGE = "primus-test/noshell:latest"

SLURM_PARTITION = "debug"
SLURM_NODES = ("n1", "n2")

MLFLOW_VENV = Path("/opt/primus-mlflow")
MLFLOW_BIN = MLFLOW_VENV / "bin" / "mlflow"

# Names of the canary secrets the `canary` fixture hands out.
CANARY_NAMES = (
    "WANDB_API_KEY",
    "HF_TOKEN",
    "DATABRICKS_TOKEN",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def engine_missing(what: str, detail: str = "", setup: str = SETUP_HINT) -> NoReturn:
    """The one rule for a missing engine: fail under CI=true, skip elsewhere."""
    __tracebackhide__ = True
    msg = f"{what} is not available"
    if detail:
        msg += f" ({detail.strip()})"
    msg += f"; {setup}"
    if in_ci():
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


# ------------------------------------------------------------------ docker


def docker_client_or_missing():
    """A docker SDK client that answers ping, or engine_missing()."""
    try:
        import docker  # imported here: only docker tests need the SDK
    except ImportError:
        docker = None
    if docker is None:
        engine_missing("the docker Python SDK", "pip install docker")
    problem = None
    try:
        client = docker.from_env(version="auto")
        client.ping()
    except Exception as exc:  # DockerException, connection errors, ...
        problem = f"{type(exc).__name__}: {exc}"
    if problem:  # outside the except: no chained traceback in the report
        engine_missing("the Docker daemon", problem)
    return client


def require_image(client, name: str) -> str:
    """Return `name` if the local image exists, else engine_missing()."""
    import docker.errors

    try:
        client.images.get(name)
        return name
    except docker.errors.ImageNotFound:
        pass
    engine_missing(f"the local test image {name}", "it is built by the setup script")


# ------------------------------------------------------------------ engine parametrisation (Docker, Podman)

PODMAN_SOCKET = "/run/podman/podman.sock"
PODMAN_SETUP_HINT = "start rootful Podman with: bash .ci/setup-podman.sh"
ENGINE_KINDS = ("docker", "podman")
TEST_IMAGES = (BUSYBOX_IMAGE, PYTHON_IMAGE, NOSHELL_IMAGE)


@dataclass(frozen=True)
class EngineHost:
    """One engine the Docker integration tests run against.

    ``env`` is what the runner's process gets (``DOCKER_HOST``; empty for Docker: the
    runner finds the default socket itself); ``cli`` the ``docker`` command line that
    inspects the same engine (the docker CLI speaks Podman's compat API too).
    """

    kind: str  # "docker" | "podman"
    host: str | None  # DOCKER_HOST, None for the default Docker socket

    @property
    def env(self) -> dict[str, str]:
        return {"DOCKER_HOST": self.host} if self.host else {}

    @property
    def cli(self) -> list[str]:
        return ["docker", "-H", self.host] if self.host else ["docker"]

    def __str__(self) -> str:
        return self.kind


def unix_http(path: str, url: str, method: str = "GET", timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request on a unix socket: (status, lower-cased headers, body)."""
    import http.client

    class _Conn(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(path)

    conn = _Conn("localhost", timeout=timeout)
    try:
        conn.request(method, url)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def podman_or_missing(socket_path: str = PODMAN_SOCKET) -> EngineHost:
    """Rootful Podman's API on ``socket_path`` with the test images, or engine_missing()."""
    problem = None
    try:
        status, headers, _ = unix_http(socket_path, "/_ping")
        if status != 200 or "libpod-api-version" not in headers:
            problem = f"{socket_path} answers /_ping with {status}, not as Podman"
        else:
            absent = [img for img in TEST_IMAGES
                      if unix_http(socket_path, f"/v1.41/images/{urllib.parse.quote(img, safe='')}/json")[0] != 200]
            if absent:
                problem = f"Podman has no {', '.join(absent)}"
    except OSError as exc:
        problem = f"{socket_path}: {type(exc).__name__}: {exc}"
    if problem:
        engine_missing("rootful Podman", problem, PODMAN_SETUP_HINT)
    return EngineHost("podman", f"unix://{socket_path}")


def docker_or_missing() -> EngineHost:
    """The default Docker daemon with the test images, or engine_missing()."""
    client = docker_client_or_missing()
    try:
        for image in TEST_IMAGES:
            require_image(client, image)
    finally:
        client.close()
    return EngineHost("docker", None)


# ------------------------------------------------------------------ slurm


@dataclass(frozen=True)
class SlurmCluster:
    partition: str  # "debug"
    nodes: tuple[str, ...]  # ("n1", "n2")
    states: Mapping[str, str]  # node name -> sinfo short state, e.g. "idle"


def slurm_cluster_or_missing() -> SlurmCluster:
    if shutil.which("sinfo") is None:
        engine_missing("Slurm", "sinfo is not on PATH")
    try:
        out = subprocess.run(
            ["sinfo", "-h", "-N", "-p", SLURM_PARTITION, "-o", "%N %t"],
            capture_output=True, text=True, timeout=30,
        )
    except subprocess.TimeoutExpired:
        out = None
    if out is None:
        engine_missing("Slurm", "sinfo timed out")
    if out.returncode != 0:
        engine_missing("Slurm", f"sinfo failed: {out.stderr.strip()}")
    states = dict(line.split(None, 1) for line in out.stdout.splitlines() if line.strip())
    usable = {"idle", "mix", "alloc", "comp"}
    bad = {n: states.get(n, "absent") for n in SLURM_NODES if states.get(n) not in usable}
    if bad:
        engine_missing("the two-node Slurm cluster", f"node states: {bad}")
    return SlurmCluster(partition=SLURM_PARTITION, nodes=SLURM_NODES, states=states)


def unprivileged_container_yaml(image: str, env: list[str]) -> str:
    """The ``container:`` section of a job without GPUs forwarding ``env``; without the privileges and
    raised limits of the defaults, which this sandboxed host refuses."""
    return f"""\
container:
  gpu: none
  options:
    image: {image}
    group-add: []
    privileged: false
    ulimit: "nofile=1024:1024"
    env: [{', '.join(env)}]
"""


def slurm_project_yaml(image: str, partition: str, env: list[str]) -> str:
    """A ``.primus.yaml`` for a two-node job on the test cluster (``unprivileged_container_yaml``)."""
    return unprivileged_container_yaml(image, env) + f"slurm:\n  partition: {partition}\n  nodes: 2\n  time: \"5\"\n"


def srun(cluster: SlurmCluster, args: list[str], nodes: int = 2, timeout: float = 180.0,
         time_limit: str = "5") -> subprocess.CompletedProcess:
    """``srun -N nodes -p partition ARGS`` under a unique job name; on timeout
    the job is cancelled (a killed srun would leave it queued) and the test fails."""
    __tracebackhide__ = True
    name = f"primus-test-{uuid.uuid4().hex[:10]}"
    cmd = ["srun", f"--job-name={name}", "-N", str(nodes), "-p", cluster.partition, "-t", time_limit, *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        subprocess.run(["scancel", f"--name={name}"], capture_output=True, timeout=30)
        queue = subprocess.run(["squeue"], capture_output=True, text=True, timeout=30).stdout
        pytest.fail(f"srun did not finish in {timeout:.0f} s; squeue:\n{queue}", pytrace=False)


# ------------------------------------------------------------------ mlflow


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MlflowServer(str):
    """The server's URI (``http://127.0.0.1:PORT``), a plain ``str`` with a
    few extra attributes: ``port``, ``log_path``, ``artifacts``, ``db``."""

    port: int
    log_path: Path
    artifacts: Path
    db: Path


def start_mlflow_server(workdir: Path, timeout: float = 180.0, artifact_root: str | None = None,
                        extra_env: dict | None = None):
    """Start ``mlflow server`` on a free loopback port, wait for /health.

    Artifacts are served over HTTP (``--serve-artifacts``) unless ``artifact_root`` is given:
    then clients write them there themselves (a directory, ``s3://...``). ``extra_env``: the
    server's own settings (``MLFLOW_S3_ENDPOINT_URL``). Returns (MlflowServer uri, Popen). Stop
    it with stop_process_group(). Every test MLflow server is started here.
    """
    if not MLFLOW_BIN.exists():
        engine_missing("the MLflow server", f"{MLFLOW_BIN} is missing")
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    db = workdir / "mlflow.db"
    artifacts = workdir / "artifacts"
    log_path = workdir / "mlflow-server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "AWS_"))}
    env.update(
        MLFLOW_DISABLE_TELEMETRY="true",
        DO_NOT_TRACK="true",
        # No background job runner (huey consumers) for a test server.
        MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
        PYTHONWARNINGS="ignore",
    )
    env.update(extra_env or {})
    cmd = [
        str(MLFLOW_BIN), "server",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--workers", "1",
        "--backend-store-uri", f"sqlite:///{db}",
        # Artifacts go through the server (mlflow-artifacts:/ URIs), so a
        # client in a container only needs HTTP access to upload them.
        *(["--serve-artifacts", "--artifacts-destination", str(artifacts)] if artifact_root is None
          else ["--no-serve-artifacts", "--default-artifact-root", artifact_root]),
        # The host-header check (DNS-rebinding guard) of mlflow >= 3.5: allow
        # what a client on this machine or in a --network host container sends.
        "--allowed-hosts", f"127.0.0.1:{port},localhost:{port},127.0.0.1,localhost",
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    uri = MlflowServer(f"http://127.0.0.1:{port}")
    uri.port, uri.log_path, uri.artifacts, uri.db = port, log_path, artifacts, db
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:]
            pytest.fail(f"mlflow server exited with {proc.returncode}:\n{tail}", pytrace=False)
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as r:
                if r.status == 200:
                    return uri, proc
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.5)
    stop_process_group(proc)
    tail = log_path.read_text(errors="replace")[-3000:]
    pytest.fail(f"mlflow server did not answer /health in {timeout:.0f} s:\n{tail}", pytrace=False)


def stop_process_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group we started (start_new_session=True), then SIGKILL."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:  # children (uvicorn worker) may outlive the leader
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass


def mlflow_api(uri: str, method: str, path: str, body: dict | None = None, params: dict | None = None) -> dict:
    """Call the MLflow REST API (``path`` like ``experiments/create``)."""
    url = f"{uri}/api/2.0/mlflow/{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"{}")


# ------------------------------------------------------------------ secrets


def sha(value: str) -> str:
    """The SHA-256 of a value (hex), as a job prints it with ``sha256sum``: compared instead of the value."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def process_cmdlines() -> list[bytes]:
    """The command line of every process on this host now (``/proc/*/cmdline``; one that ends meanwhile is left out)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes())
            except OSError:
                pass
    return found


def make_canary() -> dict[str, str]:
    """Fresh, unique fake secret values, one per name in CANARY_NAMES."""
    out = {}
    for name in CANARY_NAMES:
        tag = name.lower().replace("_", "-")
        out[name] = f"canary-{tag}-{uuid.uuid4().hex}"
    return out


def _b64_stable(value: bytes, offset: int, alphabet: str) -> str:
    """The part of base64(prefix + value) that only depends on `value`, where
    prefix is `offset` bytes: it shows up whatever surrounds the value."""
    raw = b"x" * offset + value
    enc = base64.b64encode(raw) if alphabet == "std" else base64.urlsafe_b64encode(raw)
    start = -(-8 * offset // 6)  # ceil: first char with no prefix bits
    end = (8 * (offset + len(value))) // 6  # last char with only value bits
    return enc[start:end].decode()


def labeled_encodings(value: str) -> list[tuple[str, str]]:
    """(label, text) for the value and the forms it commonly leaks in."""
    raw = value.encode()
    forms: list[tuple[str, str]] = [("plain", value)]
    forms.append(("base64", base64.b64encode(raw).decode()))
    forms.append(("base64url", base64.urlsafe_b64encode(raw).decode()))
    for offset in (0, 1, 2):
        forms.append((f"base64@{offset}", _b64_stable(raw, offset, "std")))
        forms.append((f"base64url@{offset}", _b64_stable(raw, offset, "url")))
    quoted = urllib.parse.quote(value, safe="")
    forms.append(("url", quoted))
    forms.append(("url-lowerhex", re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quoted)))
    forms.append(("url-plus", urllib.parse.quote_plus(value, safe="")))
    forms.append(("json", json.dumps(value)[1:-1]))
    forms.append(("json-unicode", json.dumps(value, ensure_ascii=False)[1:-1]))
    seen: set[str] = set()
    out = []
    for label, text in forms:
        # Too-short fragments would match by chance; canaries are long.
        if len(text) >= 8 and text not in seen:
            seen.add(text)
            out.append((label, text))
    return out


def common_forms(value: str) -> list[str]:
    """The value, its base64 (whole, and of bytes 1 to 21: a value inside a longer base64 stream), URL-quoted
    and JSON-escaped: a quick check of a command's output, independent of runner.secrets."""
    raw = value.encode()
    return [value, base64.b64encode(raw).decode(), base64.b64encode(raw[1:22]).decode(),
            urllib.parse.quote(value, safe=""), json.dumps(value)[1:-1]]


def encodings(value: str) -> list[str]:
    """The value plus its base64 (whole, and the stable middle part it has at
    byte offsets 0, 1, 2 inside a longer stream; standard and URL-safe
    alphabets), URL-encoded and JSON-escaped forms; no duplicates."""
    return [text for _, text in labeled_encodings(value)]


def _as_named(canary_values: Mapping[str, str] | Iterable[str]) -> list[tuple[str, str]]:
    if isinstance(canary_values, Mapping):
        return list(canary_values.items())
    return [(f"secret #{i}", v) for i, v in enumerate(canary_values)]


def find_leaks(data: str | bytes, canary_values: Mapping[str, str] | Iterable[str]) -> list[tuple[str, str]]:
    """(secret NAME, encoding label) for every canary found in `data`."""
    blob = data if isinstance(data, (bytes, bytearray)) else str(data).encode("utf-8", "surrogateescape")
    found = []
    for name, value in _as_named(canary_values):
        if not value:
            continue
        for label, text in labeled_encodings(value):
            if text.encode() in blob:
                found.append((name, label))
                break
    return found


def assert_no_leak(data: str | bytes, canary_values: Mapping[str, str] | Iterable[str], where: str) -> None:
    """Fail if any canary value (or a common encoding of it) is in `data`.

    The message names the secret and `where`, never the value.
    """
    __tracebackhide__ = True  # keep this frame (which holds the values) out of reports
    leaks = find_leaks(data, canary_values)
    if leaks:
        listed = ", ".join(f"{name} (as {label})" for name, label in leaks)
        pytest.fail(f"secret leaked in {where}: {listed}", pytrace=False)
