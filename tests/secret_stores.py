"""Real secret stores for the secret-reference tests: a throw-away `pass` store
(its own GnuPG home and key) and a moto AWS Secrets Manager server on loopback.

Installed by ``bash .ci/setup-secret-stores.sh``; a missing store fails the test
under CI=true and skips it elsewhere (``engines.engine_missing``). Nothing here
touches the user's own ~/.gnupg, ~/.password-store or ~/.aws.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine_fixtures import engine_missing, free_port, stop_process_group

SETUP = "bash .ci/setup-secret-stores.sh"


# ------------------------------------------------------------------ pass


@dataclass(frozen=True)
class PassStore:
    """A password store with its own key: ``env`` is what `pass` and gpg need."""

    gnupghome: Path
    store_dir: Path
    fingerprint: str

    @property
    def env(self) -> dict[str, str]:
        return {"GNUPGHOME": str(self.gnupghome), "PASSWORD_STORE_DIR": str(self.store_dir)}

    def _run(self, args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess:
        env = {**os.environ, **self.env}
        return subprocess.run(args, input=stdin, capture_output=True, env=env, timeout=60, check=True)

    def insert(self, path: str, content: str) -> None:
        """``pass insert -m path``: the content as given (first line = the password)."""
        self._run(["pass", "insert", "-m", "-f", path], stdin=content.encode())

    def remove(self, path: str) -> None:
        self._run(["pass", "rm", "-f", path])


def make_pass_store() -> PassStore:
    """A new store: a passphrase-less GPG key (``--quick-gen-key``), ``pass init FPR``.

    The GnuPG home is a short path under /tmp: gpg-agent's socket path must fit in
    108 bytes. Stop its agent with :func:`remove_pass_store`."""
    for program in ("pass", "gpg", "gpgconf"):
        if shutil.which(program) is None:
            engine_missing(f"`{program}`", SETUP)
    root = Path(tempfile.mkdtemp(prefix="prs-"))
    gnupghome, store_dir = root / "g", root / "s"
    gnupghome.mkdir(mode=0o700)
    env = {**os.environ, "GNUPGHOME": str(gnupghome), "PASSWORD_STORE_DIR": str(store_dir)}
    subprocess.run(
        ["gpg", "--batch", "--passphrase", "", "--quick-gen-key", "primus-test <primus-test@localhost>",
         "default", "default", "never"],
        env=env, capture_output=True, check=True, timeout=120,
    )
    listing = subprocess.run(
        ["gpg", "--batch", "--list-secret-keys", "--with-colons"], env=env, capture_output=True, text=True,
        check=True, timeout=30,
    ).stdout
    fingerprint = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))
    subprocess.run(["pass", "init", fingerprint], env=env, capture_output=True, check=True, timeout=60)
    return PassStore(gnupghome, store_dir, fingerprint)


def remove_pass_store(store: PassStore) -> None:
    # The agent gpg started for this home only; the user's agent is untouched.
    subprocess.run(["gpgconf", "--homedir", str(store.gnupghome), "--kill", "all"], capture_output=True, timeout=30)
    shutil.rmtree(store.gnupghome.parent, ignore_errors=True)


# ------------------------------------------------------------------ moto


@dataclass
class MotoServer:
    """``moto_server`` on 127.0.0.1:port; ``env`` points boto3 at it with dummy keys."""

    url: str
    proc: subprocess.Popen
    log_path: Path

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def client(self):
        import boto3

        return boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        ).client("secretsmanager", endpoint_url=self.url)

    def stop(self) -> None:
        stop_process_group(self.proc)


def isolated_aws_env(tmp: Path) -> dict[str, str]:
    """No ~/.aws files and no instance-metadata lookups from the test's AWS clients."""
    return {
        "AWS_CONFIG_FILE": str(tmp / "aws-config-absent"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "aws-credentials-absent"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def _moto_server_bin() -> str | None:
    beside = Path(sys.executable).parent / "moto_server"
    return str(beside) if beside.exists() else shutil.which("moto_server")


def start_moto_server(workdir: Path, timeout: float = 60.0) -> MotoServer:
    """Start ``moto_server`` on a free loopback port and wait until it answers."""
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError as exc:
        engine_missing("boto3 / moto[server]", f"{exc}; {SETUP}")
    binary = _moto_server_bin()
    if binary is None:
        engine_missing("moto_server", SETUP)
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = workdir / f"moto-{port}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [binary, "-H", "127.0.0.1", "-p", str(port)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    server = MotoServer(f"http://127.0.0.1:{port}", proc, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"moto_server exited with {proc.returncode}:\n{log_path.read_text()[-2000:]}", pytrace=False)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            time.sleep(0.2)
    server.stop()
    pytest.fail(f"moto_server did not listen on {port} within {timeout:.0f} s", pytrace=False)
