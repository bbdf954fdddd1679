"""Smoke tests of the test infrastructure itself, against the real engines:
Docker and the local images, the two-node Slurm cluster (also running docker
on both nodes), the MLflow server (REST API, artifacts over HTTP, reachable
from a --network host container), and the leak-check helpers."""

from __future__ import annotations

import base64
import json
import urllib.parse
import urllib.request
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_fixtures import assert_no_leak, encodings, find_leaks, mlflow_api, srun

LABELS = {"primus-test": "engines"}


def run_container(client, image, command, **kwargs) -> tuple[int, bytes]:
    """Run to completion; return (exit code, logs). Always removes it."""
    container = client.containers.create(image, command, labels=LABELS, **kwargs)
    try:
        container.start()
        code = container.wait(timeout=120)["StatusCode"]
        return code, container.logs()
    finally:
        container.remove(force=True)


# ------------------------------------------------------------------ docker


@pytest.mark.docker
def test_busybox_runs_and_has_the_applets(docker_client, busybox_image):
    script = (
        "for a in sh env cat echo sleep true false printf head dd wget tr base64 seq yes kill ls mkdir rm id; do "
        "command -v $a >/dev/null || echo missing $a; done; "
        "trap 'echo trapped' USR1; kill -USR1 $$; echo hello-$GREETING"
    )
    code, out = run_container(docker_client, busybox_image, ["sh", "-c", script], environment={"GREETING": "world"})
    assert code == 0
    assert out.decode().split() == ["trapped", "hello-world"]


@pytest.mark.docker
def test_busybox_exit_code(docker_client, busybox_image):
    code, _ = run_container(docker_client, busybox_image, ["sh", "-c", "exit 7"])
    assert code == 7


@pytest.mark.docker
def test_noshell_image_has_no_shell(docker_client, noshell_image):
    import docker.errors

    code, out = run_container(docker_client, noshell_image, ["env"], environment={"PROBE": "1"})
    assert code == 0 and b"PROBE=1" in out
    with pytest.raises(docker.errors.APIError):
        run_container(docker_client, noshell_image, ["/bin/sh", "-c", "true"])
    with pytest.raises(docker.errors.APIError):
        run_container(docker_client, noshell_image, ["sh", "-c", "true"])


@pytest.mark.docker
def test_python_image_has_python_venv_pip(docker_client, python_image):
    code, out = run_container(
        docker_client, python_image,
        ["python3", "-c", "import venv, ssl, ensurepip, sys; print(sys.version_info[:2])"],
    )
    assert code == 0, out
    assert out.decode().strip() == "(3, 11)"


# ------------------------------------------------------------------ slurm


@pytest.mark.slurm
def test_srun_on_both_nodes(slurm_cluster):
    assert slurm_cluster.partition == "debug"
    assert slurm_cluster.nodes == ("n1", "n2")
    result = srun(slurm_cluster, ["printenv", "SLURM_NODEID"])
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["0", "1"]


@pytest.mark.slurm
@pytest.mark.docker
def test_slurm_job_runs_docker_on_every_node(slurm_cluster, busybox_image):
    # What `submit` needs: each node's task can start a container.
    script = f"docker run --rm --label primus-test=engines {busybox_image} echo node-$SLURM_NODEID"
    result = srun(slurm_cluster, ["sh", "-c", script])
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["node-0", "node-1"]


# ------------------------------------------------------------------ mlflow


@pytest.mark.mlflow
def test_mlflow_health_and_experiment_roundtrip(mlflow_server):
    with urllib.request.urlopen(f"{mlflow_server}/health", timeout=10) as r:
        assert r.status == 200 and r.read().strip() == b"OK"
    name = f"infra-smoke-{uuid.uuid4().hex[:8]}"
    exp_id = mlflow_api(mlflow_server, "POST", "experiments/create", {"name": name})["experiment_id"]
    got = mlflow_api(mlflow_server, "GET", "experiments/get", params={"experiment_id": exp_id})
    assert got["experiment"]["name"] == name
    assert got["experiment"]["artifact_location"].startswith("mlflow-artifacts:")

    # A run with a param, and an artifact uploaded over HTTP (proxied artifacts).
    run = mlflow_api(mlflow_server, "POST", "runs/create", {"experiment_id": exp_id})["run"]["info"]
    mlflow_api(mlflow_server, "POST", "runs/log-parameter", {"run_id": run["run_id"], "key": "k", "value": "v"})
    artifact_path = urllib.parse.urlparse(run["artifact_uri"]).path.lstrip("/")
    put = urllib.request.Request(
        f"{mlflow_server}/api/2.0/mlflow-artifacts/artifacts/{artifact_path}/hello.txt",
        data=b"hello artifact", method="PUT",
    )
    with urllib.request.urlopen(put, timeout=30) as r:
        assert r.status == 200
    assert (mlflow_server.artifacts / artifact_path / "hello.txt").read_bytes() == b"hello artifact"
    fetched = mlflow_api(mlflow_server, "GET", "runs/get", params={"run_id": run["run_id"]})
    assert {"key": "k", "value": "v"} in fetched["run"]["data"]["params"]


@pytest.mark.mlflow
@pytest.mark.docker
def test_mlflow_reachable_from_host_network_container(mlflow_server, docker_client, busybox_image):
    # The server's host-header guard must accept what a container sends.
    name = f"from-container-{uuid.uuid4().hex[:8]}"
    script = (
        f"wget -qO- {mlflow_server}/health && echo && "
        f"wget -qO- --header 'Content-Type: application/json' "
        f"--post-data '{{\"name\": \"{name}\"}}' {mlflow_server}/api/2.0/mlflow/experiments/create"
    )
    code, out = run_container(docker_client, busybox_image, ["sh", "-c", script], network_mode="host")
    assert code == 0, out
    health, created = out.decode().split("\n", 1)
    assert health.strip() == "OK"
    exp_id = json.loads(created)["experiment_id"]
    got = mlflow_api(mlflow_server, "GET", "experiments/get", params={"experiment_id": exp_id})
    assert got["experiment"]["name"] == name


# ------------------------------------------------------------------ leak helpers


def test_canary_values_are_unique_and_named(canary):
    assert {"WANDB_API_KEY", "HF_TOKEN", "DATABRICKS_TOKEN", "MLFLOW_TRACKING_PASSWORD"} <= set(canary)
    assert len(set(canary.values())) == len(canary)
    assert all(v.startswith("canary-") for v in canary.values())


def test_encodings_cover_common_forms():
    value = 'p@ss/w+rd "quoted" \\ canary-0123456789'
    forms = encodings(value)
    assert forms[0] == value
    assert base64.b64encode(value.encode()).decode() in forms
    assert urllib.parse.quote(value, safe="") in forms
    assert json.dumps(value)[1:-1] in forms
    assert len(forms) == len(set(forms))


@settings(max_examples=200, deadline=None)
@given(prefix=st.binary(max_size=7), suffix=st.binary(max_size=7), urlsafe=st.booleans())
def test_encodings_find_base64_at_any_offset(prefix, suffix, urlsafe):
    value = "canary-hf-token-5f0e1d2c3b4a"
    enc = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    blob = enc(prefix + value.encode() + suffix)
    assert find_leaks(blob, {"HF_TOKEN": value}), "base64 at this offset was not recognised"


def test_assert_no_leak_names_secret_not_value(canary):
    assert_no_leak("nothing to see", canary, "stdout")
    assert_no_leak(b"nothing to see", canary, "stdout")
    text = "log line: " + base64.b64encode(b"Bearer " + canary["HF_TOKEN"].encode()).decode()
    with pytest.raises(pytest.fail.Exception) as info:
        assert_no_leak(text, canary, "the batch script")
    message = str(info.value)
    assert "HF_TOKEN" in message and "the batch script" in message
    for value in canary.values():
        for form in encodings(value):
            assert form not in message
