"""The job's log written straight into the run's artifact store where its protocol needs no
MLflow client: a directory, local or shared (a file copy, as MLflow's local store makes), and
S3 (one ``put_object``, as MLflow's S3 store makes with the same variables). Importing MLflow
costs seconds; boto3 alone is what S3 costs, and it loads in a thread while the job runs.

Credentials: boto3 reads them from ``os.environ``, which the caller fills for the call
(``runner.trackers.mlflow.client.client_env``).
"""

from __future__ import annotations

import importlib
import json
import os
import urllib.parse

from runner.trackers.httpapi import UPLOAD_TIMEOUT, truthy
from runner.trackers.mlflow.api import LOG_ARTIFACT, PROBE_DATA, probe_dir
from runner.trackers.background import Background, silence_logs


def local_path(uri: str) -> str | None:
    """The host path of a ``file:`` URI or an absolute path (a directory store); None otherwise."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        path = urllib.parse.unquote(parts.path)
    elif not parts.scheme and uri.startswith("/"):
        path = uri
    else:
        return None
    return os.path.normpath(path) if path.startswith("/") else None


def write_artifact(directory: str, relative: str, data: bytes) -> None:
    """``data`` as ``directory/relative``, as MLflow's local artifact store copies a file there."""
    target = os.path.join(directory, relative)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)  # not through a planted symlink
    fd = os.open(target, flags, 0o666)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def writes_directly(location: str) -> bool:
    """True when this module writes to the store at ``location`` (no MLflow client needed)."""
    return local_path(location) is not None or urllib.parse.urlsplit(location).scheme == "s3"


def _s3_session():
    """A boto3 session whose S3 client machinery is loaded: importing boto3 and making the first client (the
    service model, the endpoint rules) is nearly all of S3's cost; a second client of the session takes ms.
    The warm-up client has explicit placeholder keys and sends nothing: the real one is made later, with the
    plan's environment, which is never put in ``os.environ`` from this thread."""
    boto3 = importlib.import_module("boto3")
    session = boto3.session.Session()
    session.client("s3", region_name="us-east-1", aws_access_key_id="warm-up", aws_secret_access_key="warm-up")
    return session


_S3_SESSION = Background("s3-client", _s3_session)


def preload(location: str) -> None:
    """Start importing what writing to ``location`` needs, so the job's run time hides it."""
    if urllib.parse.urlsplit(location).scheme == "s3":
        _S3_SESSION.start()


def _s3_client():
    session = _S3_SESSION.get()
    from botocore.config import Config

    silence_logs("botocore", "boto3", "s3transfer", "urllib3")
    attempts = int(os.environ.get("AWS_MAX_ATTEMPTS") or 3)
    config = Config(signature_version="s3v4", retries={"max_attempts": attempts, "mode": "standard"},
                    connect_timeout=UPLOAD_TIMEOUT, read_timeout=UPLOAD_TIMEOUT)
    verify = False if truthy(os.environ.get("MLFLOW_S3_IGNORE_TLS")) else None  # None: boto3's default, AWS_CA_BUNDLE included
    return session.client("s3", endpoint_url=os.environ.get("MLFLOW_S3_ENDPOINT_URL") or None, verify=verify, config=config)


def _s3_key(location: str, relative: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(location)
    return parts.netloc, "/".join(p for p in (parts.path.strip("/"), relative) if p)


def upload(location: str, data: bytes) -> None:
    """``data`` as the run's log under the artifact ``location``; raises OSError / boto3's errors."""
    directory = local_path(location)
    if directory is not None:
        write_artifact(directory, LOG_ARTIFACT, data)
        return
    bucket, key = _s3_key(location, LOG_ARTIFACT)
    extra = json.loads(os.environ.get("MLFLOW_S3_UPLOAD_EXTRA_ARGS") or "{}")  # e.g. ServerSideEncryption, as MLflow applies it
    _s3_client().put_object(Bucket=bucket, Key=key, Body=data, ContentType="text/plain", **extra)


def probe(location: str) -> None:
    """Write a small file under ``location`` and remove it again (``check --online``)."""
    name = probe_dir()
    directory = local_path(location)
    if directory is not None:
        write_artifact(directory, f"{name}/probe.txt", PROBE_DATA)
        os.unlink(os.path.join(directory, name, "probe.txt"))
        os.rmdir(os.path.join(directory, name))
        return
    bucket, key = _s3_key(location, f"{name}/probe.txt")
    client = _s3_client()
    client.put_object(Bucket=bucket, Key=key, Body=PROBE_DATA)
    client.delete_object(Bucket=bucket, Key=key)
