"""The password-protected loopback registry of ``.ci/setup-registry.sh`` for pull and credential tests.

``test_registry`` (a session fixture; import it into a test module) checks the
registry answers and holds the test images, and hands out its address, user and
password. Missing → ``engines.engine_missing``: fails under CI=true, skips elsewhere.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine_fixtures import engine_missing, find_leaks

CRED_FILE = Path("/etc/primus-test-registry/credentials")
SETUP = "bash .ci/setup-registry.sh"
HELPER_NAME = "primustest"  # docker-credential-primustest


@dataclass(frozen=True)
class TestRegistry:
    __test__ = False  # not a test class

    addr: str  # 127.0.0.1:5599
    user: str
    password: str

    @property
    def busybox(self) -> str:
        return f"{self.addr}/primus-test/busybox:latest"

    @property
    def big(self) -> str:
        return f"{self.addr}/primus-test/big:latest"

    def __repr__(self) -> str:  # never the password in a test report
        return f"TestRegistry({self.addr!r}, user={self.user!r})"


def _v2(addr: str, auth: str | None = None, path: str = "/v2/") -> int:
    headers = {"Accept": "application/vnd.docker.distribution.manifest.v2+json"}
    if auth:
        headers["Authorization"] = f"Basic {auth}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(f"http://{addr}{path}", headers=headers), timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def registry_or_missing() -> TestRegistry:
    try:
        fields = dict(line.split("=", 1) for line in CRED_FILE.read_text().split())
    except OSError as exc:
        engine_missing("the test registry", f"{CRED_FILE}: {exc.strerror}; run {SETUP}")
    reg = TestRegistry(fields["registry"], fields["user"], fields["password"])
    if _v2(reg.addr) != 401:
        engine_missing("the test registry", f"http://{reg.addr}/v2/ does not answer 401; run {SETUP}")
    auth = base64.b64encode(f"{reg.user}:{reg.password}".encode()).decode()
    for repo in ("primus-test/busybox", "primus-test/big"):
        if _v2(reg.addr, auth, f"/v2/{repo}/manifests/latest") != 200:
            engine_missing("the test registry's images", f"{repo}:latest is missing; run {SETUP}")
    return reg


@pytest.fixture(scope="session")
def test_registry() -> TestRegistry:
    return registry_or_missing()


def remove_local(docker_client, *images: str) -> None:
    """Remove local tags so the next pull is a real one (our own tags only)."""
    import docker.errors

    for image in images:
        try:
            docker_client.images.remove(image, noprune=False)
        except docker.errors.ImageNotFound:
            pass


def write_docker_config(directory: Path, body: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / "config.json"
    path.write_text(json.dumps(body))
    path.chmod(0o600)
    return path


def auths_entry(reg: TestRegistry) -> dict:
    return {"auths": {reg.addr: {"auth": base64.b64encode(f"{reg.user}:{reg.password}".encode()).decode()}}}


def write_credential_helper(bin_dir: Path) -> Path:
    """``docker-credential-primustest``: answers ``get`` for the test registry from the root-only
    credentials file, as a keychain would (the value never on a command line or in the test's files)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    helper = bin_dir / f"docker-credential-{HELPER_NAME}"
    helper.write_text(f"""#!/usr/bin/env python3
import json, sys
if sys.argv[1:] != ["get"]:
    sys.exit(1)
server = sys.stdin.read().strip()
fields = dict(line.split("=", 1) for line in open({str(CRED_FILE)!r}).read().split())
if server != fields["registry"]:
    print("credentials not found in native keychain")
    sys.exit(1)
print(json.dumps({{"ServerURL": server, "Username": fields["user"], "Secret": fields["password"]}}))
""")
    helper.chmod(helper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return helper


class CmdlineWatch:
    """Scans every process's command line (and environment of processes we did not start) while running."""

    def __init__(self, needles: list[str]):
        self.needles = [n.encode() for n in needles if n]
        self.hits: list[str] = []
        self.scans = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                for needle in self.needles:
                    if needle in data:
                        program = data.split(b"\0", 1)[0].decode(errors="replace")
                        self.hits.append(f"pid {entry.name}: {program}")
            self.scans += 1
            self._stop.wait(0.005)

    def __enter__(self) -> "CmdlineWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)


def files_containing(root: Path, needles: list[str], skip: set[Path] = frozenset()) -> list[str]:
    """Files under ``root`` holding any of ``needles`` or a common encoding of one (names only)."""
    found = []
    for path in root.rglob("*"):
        if path in skip or not path.is_file() or path.is_symlink():
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if find_leaks(data, needles):
            found.append(str(path))
    return found


def docker_inspect(image: str) -> str:
    return subprocess.run(["docker", "image", "inspect", image], capture_output=True, text=True, timeout=60).stdout
