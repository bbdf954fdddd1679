"""The tracker job images the suite builds on the local python image, each once, tagged by a hash of
its recipe (tests/integration/images/<name>/Dockerfile): ``job_image`` (Python with mlflow-skinny and
wandb) and ``s3_job_image`` (that plus boto3). Test files import the fixtures from here.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import pytest

RECIPES = Path(__file__).parent / "images"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def build_once(docker_client, name: str, base_image: str, salt: bytes = b"") -> str:
    """primus-test/NAME:<hash of salt + its Dockerfile>, built on ``base_image`` unless the daemon has it."""
    import docker.errors

    dockerfile = RECIPES / name / "Dockerfile"
    tag = f"primus-test/{name}:" + hashlib.sha256(salt + dockerfile.read_bytes()).hexdigest()[:12]
    try:
        docker_client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    with tempfile.TemporaryDirectory() as ctx:
        shutil.copy(dockerfile, ctx)
        shutil.copy(CA_BUNDLE, Path(ctx) / "ca-certificates.crt")  # pip inside the build trusts what the host trusts
        docker_client.images.build(path=ctx, tag=tag, network_mode="host", rm=True, forcerm=True, buildargs={"BASE_IMAGE": base_image})
    return tag


@pytest.fixture(scope="session")
def job_image(docker_client, python_image) -> str:
    """primus-test/mlflow-job:<hash of the Dockerfile>, built on the local python image if missing."""
    return build_once(docker_client, "mlflow-job", python_image)


@pytest.fixture(scope="session")
def s3_job_image(docker_client, job_image) -> str:
    """The tracker job image plus boto3: primus-test/mlflow-s3-job:<hash of both Dockerfiles>."""
    return build_once(docker_client, "mlflow-s3-job", job_image, salt=job_image.encode())
