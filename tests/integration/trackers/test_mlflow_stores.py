"""``mlflow_upload_logs`` and the run handshake on every kind of artifact store, end to end.

Three real MLflow servers: (a) the suite's proxied one (``mlflow_server``,
``mlflow-artifacts:``), (b) one with a non-proxied local ``--default-artifact-root``
(a directory this host shares with the server), (c) one with an S3 root on a
moto S3 endpoint on loopback (``MLFLOW_S3_ENDPOINT_URL``, canary AWS keys).
A busybox job launched with the real CLI logs a metric into the runner's run over
the REST API with nothing but its forwarded environment and prints its secrets
(which the runner masks); the runner closes the run and uploads the masked log
through ``mlflow.MlflowClient``. Everything recorded is read back through
MlflowClient and boto3 and scanned for the canaries.

Needs ``bash .ci/setup-engines.sh`` and ``bash .ci/setup-mlflow-stores.sh``.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from docker_helpers import Workspace, force_remove, tracker_config, unique
from plan_factory import plan_from
from engine_fixtures import assert_no_leak, engine_missing, free_port, start_mlflow_server, stop_process_group
from loopback_servers import Server

SETUP = "bash .ci/setup-mlflow-stores.sh"
BUCKET = "primus-runner-artifacts"

MLFLOW_TRACKERS = """  disable_mlflow: false
  mlflow_experiment_name: {experiment}
  mlflow_run_name: {run_name}
  mlflow_upload_logs: true
"""
CONFIG = tracker_config(MLFLOW_TRACKERS)

# The job: the run id it was given, its secrets (masked by the runner before the
# log is uploaded), and a metric logged into the runner's run with busybox wget.
JOB = r"""
echo "run=$MLFLOW_RUN_ID experiment=$MLFLOW_EXPERIMENT_ID"
echo "aws=$AWS_SECRET_ACCESS_KEY session=$AWS_SESSION_TOKEN token=$MLFLOW_TRACKING_TOKEN hf=$HF_TOKEN"
ts=$(date +%s)000
wget -q -O - --header 'Content-Type: application/json' \
  --post-data "{\"run_id\":\"$MLFLOW_RUN_ID\",\"key\":\"loss\",\"value\":1.5,\"timestamp\":$ts,\"step\":0}" \
  "$MLFLOW_TRACKING_URI/api/2.0/mlflow/runs/log-metric" >/dev/null && echo metric-logged
exit "$1"
"""


def _client_or_missing():
    try:
        import boto3  # noqa: F401
        from mlflow.tracking import MlflowClient  # noqa: F401
    except ImportError as exc:
        engine_missing("the runner's mlflow extra (mlflow-skinny, boto3)", str(exc), setup=SETUP)


def _wait_http(url: str, proc: subprocess.Popen, log: Path, what: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}", pytrace=False)
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError as exc:  # URLError, refused; an HTTP error means it answers
            if getattr(exc, "code", None):
                return
        time.sleep(0.5)
    stop_process_group(proc)
    pytest.fail(f"{what} did not answer in {timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}", pytrace=False)


def _start(cmd: list[str], workdir: Path, env: dict, what: str, health: str) -> subprocess.Popen:
    log = workdir / f"{what.replace(' ', '-')}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    _wait_http(health, proc, log, what)
    return proc


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    """``http://127.0.0.1:PORT``: moto's S3 server with the bucket ``BUCKET``."""
    _client_or_missing()
    import shutil

    if shutil.which("moto_server") is None:
        engine_missing("moto_server", "pip install 'moto[server]'", setup=SETUP)
    port = free_port()
    workdir = tmp_path_factory.mktemp("moto")
    url = f"http://127.0.0.1:{port}"
    proc = _start(["moto_server", "-H", "127.0.0.1", "-p", str(port)], workdir, dict(os.environ), "moto server", url + "/moto-api/")
    try:
        import boto3

        s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id="setup", aws_secret_access_key="setup", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        yield url
    finally:
        stop_process_group(proc)


@pytest.fixture(scope="session")
def local_store_server(tmp_path_factory):
    """(uri, artifact root directory): artifacts written by the client straight into a directory."""
    _client_or_missing()
    workdir = tmp_path_factory.mktemp("mlflow-local-store")
    root = workdir / "artifacts"
    root.mkdir()
    uri, proc = start_mlflow_server(workdir, artifact_root=str(root))
    try:
        yield uri, root
    finally:
        stop_process_group(proc)


@pytest.fixture(scope="session")
def s3_store_server(tmp_path_factory, s3_endpoint):
    workdir = tmp_path_factory.mktemp("mlflow-s3-store")
    uri, proc = start_mlflow_server(workdir, artifact_root=f"s3://{BUCKET}/mlflow", extra_env={"MLFLOW_S3_ENDPOINT_URL": s3_endpoint})
    try:
        yield uri
    finally:
        stop_process_group(proc)


@pytest.fixture(params=["proxied", "local", "s3"])
def store(request, canary):
    """(tracking URI, env the runner and the reader need, canaries) for each kind of store."""
    secrets = dict(canary)
    if request.param == "proxied":
        uri, env = request.getfixturevalue("mlflow_server"), {}
    elif request.param == "local":
        uri, env = request.getfixturevalue("local_store_server")[0], {}
    else:
        uri = request.getfixturevalue("s3_store_server")
        secrets["AWS_SECRET_ACCESS_KEY"] = f"canary-aws-secret-{uuid.uuid4().hex}"
        secrets["AWS_SESSION_TOKEN"] = f"canary-aws-session-{uuid.uuid4().hex}"
        env = {"MLFLOW_S3_ENDPOINT_URL": request.getfixturevalue("s3_endpoint"), "AWS_ACCESS_KEY_ID": "primus-test-key-id",
               "AWS_DEFAULT_REGION": "us-east-1"}
    return request.param, str(uri), env, secrets


def _reader(monkeypatch, uri: str, env: dict, secrets: dict):
    """An MlflowClient for reading back, with the store's credentials in this process's environment."""
    from mlflow.tracking import MlflowClient

    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        if name in secrets:
            monkeypatch.setenv(name, secrets[name])
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return MlflowClient(tracking_uri=uri)


def _everything(client, run_id: str, tmp: Path) -> bytes:
    """Params, tags, metrics and every artifact of the run, as one blob to scan."""
    run = client.get_run(run_id)
    blob = json.dumps({"params": run.data.params, "tags": run.data.tags, "metrics": run.data.metrics}).encode()
    stack = [""]
    while stack:
        for item in client.list_artifacts(run_id, stack.pop() or None):
            if item.is_dir:
                stack.append(item.path)
            else:
                blob += Path(client.download_artifacts(run_id, item.path, str(tmp))).read_bytes()
    return blob


def _s3_objects(endpoint: str, secrets: dict) -> bytes:
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="reader", aws_secret_access_key="reader", region_name="us-east-1")
    blob = b""
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for obj in page.get("Contents", []):
            blob += obj["Key"].encode() + s3.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()
    return blob


def _workspace(tmp_path: Path, secrets: dict, env: dict, experiment: str, run_name: str) -> Workspace:
    ws = Workspace(tmp_path, secrets, CONFIG.format(experiment=experiment, run_name=run_name)).without_host_trackers("AWS_")
    ws.env.update(env)
    return ws


@pytest.mark.docker
@pytest.mark.mlflow
@pytest.mark.parametrize("code,status", [(0, "FINISHED"), (3, "FAILED")])
def test_up_logs_into_the_run_and_uploads_the_masked_log(tmp_path, monkeypatch, store, busybox_image, code, status):
    kind, uri, env, secrets = store
    experiment, run_name, name = unique("exp"), unique("run"), unique("st")
    ws = _workspace(tmp_path, secrets, {**env, "MLFLOW_TRACKING_URI": uri}, experiment, run_name)
    try:
        done = ws.run("up", "--image", busybox_image, "--name", name, "--", "sh", "-c", JOB, "job", str(code), timeout=240)
    finally:
        force_remove(name)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == code, err
    assert "metric-logged" in out, out + err
    assert "warning" not in err.lower(), err  # the upload did not degrade to a warning
    assert "View run" not in out  # the client's own prints stay out of the runner's stdout
    run_id = re.search(r"run=([0-9a-f]{32})", out).group(1)
    assert_no_leak(done.stdout + done.stderr, secrets, "the runner's output")

    client = _reader(monkeypatch, uri, env, secrets)
    run = client.get_run(run_id)
    assert run.info.status == status and run.info.run_name == run_name
    assert run.data.metrics == {"loss": 1.5}
    assert run.data.tags["primus-runner.job"] == name
    scheme = {"proxied": "mlflow-artifacts:", "local": "/", "s3": "s3://"}[kind]
    assert run.info.artifact_uri.startswith(scheme), run.info.artifact_uri
    log = Path(client.download_artifacts(run_id, "primus-runner/job-output.log", str(tmp_path))).read_bytes()
    assert b"aws=*** session=*** token=*** hf=***" in log or (kind != "s3" and b"aws= session= token=*** hf=***" in log), log
    assert_no_leak(_everything(client, run_id, tmp_path / "all"), secrets, f"the MLflow run on the {kind} store")
    if kind == "s3":
        assert_no_leak(_s3_objects(env["MLFLOW_S3_ENDPOINT_URL"], secrets), secrets, "the S3 bucket")


@pytest.mark.mlflow
def test_check_online_probes_each_artifact_store(tmp_path, request, store):
    kind, uri, env, secrets = store
    ws = _workspace(tmp_path, secrets, {**env, "MLFLOW_TRACKING_URI": uri}, "Default", "r")
    done = ws.run("--json", "check", "--online", "--gpu", "none", "--image", "x", timeout=120)
    report = json.loads(done.stdout)
    [mlflow] = [t for t in report["trackers"] if t["tracker"] == "mlflow"]
    assert mlflow["status"] == "reachable", mlflow
    assert "writable (probe written and removed)" in mlflow["detail"], mlflow
    assert_no_leak(done.stdout + done.stderr, secrets, "check --online output")
    if kind == "local":  # the probe is gone again
        assert not list(request.getfixturevalue("local_store_server")[1].rglob("primus-runner-probe*"))
    if kind == "s3":
        assert b"primus-runner-probe" not in _s3_objects(env["MLFLOW_S3_ENDPOINT_URL"], secrets)


@pytest.mark.mlflow
def test_s3_store_with_a_wrong_endpoint_is_a_problem_for_check_online(tmp_path, s3_store_server, canary):
    env = {"MLFLOW_TRACKING_URI": s3_store_server, "MLFLOW_S3_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
           "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": canary["HF_TOKEN"] + "-aws"}
    ws = _workspace(tmp_path, canary, env, "Default", "r")
    done = ws.run("--json", "check", "--online", "--timeout", "3", "--gpu", "none", "--image", "x", timeout=180)
    assert done.returncode == 2, done.stderr.decode()
    [mlflow] = json.loads(done.stdout)["trackers"]
    assert mlflow["status"] == "unreachable" and "artifact store s3://" in mlflow["detail"], mlflow
    assert_no_leak(done.stdout + done.stderr, {**canary, "AWS": canary["HF_TOKEN"] + "-aws"}, "check --online output")


# ------------------------------------------------------------------ the handshake in-process: no extra, Databricks sign-ins


def _planned(work: Path, host: dict, trackers: str = "  disable_mlflow: false\n  mlflow_upload_logs: true\n"):
    planned = plan_from(work, "container:\n  options:\n    image: img\ntrackers:\n  framework: generic\n" + trackers, host=host,
                        flags=["--gpu", "none"], name=unique("hs"))
    assert not planned.problems, planned.problems
    return planned


def _output(planned):
    from runner.ui import Output

    return Output(masker=planned.scope.masker)  # the one secret scope's masker


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in [k for k in os.environ if k.startswith(("MLFLOW_", "DATABRICKS_", "AWS_"))]:
        monkeypatch.delenv(name)
    return tmp_path


@pytest.mark.mlflow
def test_without_the_extra_a_local_store_still_gets_the_log(home, local_store_server, monkeypatch, capsys):
    """A directory store needs no MLflow client: the log is copied into it (it needed the extra before)."""
    from runner.trackers import handshake as tracker_runs

    monkeypatch.setattr(importlib.import_module("runner.trackers.mlflow.client"), "installed", lambda: False)
    uri, root = local_store_server
    planned = _planned(home, {"MLFLOW_TRACKING_URI": uri})
    hs = tracker_runs.begin(planned.plan, _output(planned))
    hs.finish(0, b"job output\n")
    assert "warning" not in capsys.readouterr().err.lower()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    run_id = hs.env["MLFLOW_RUN_ID"]
    assert client.get_run(run_id).info.status == "FINISHED"  # the run itself works over REST
    [log] = list(root.rglob(f"{run_id}/artifacts/primus-runner/job-output.log"))
    assert log.read_bytes() == b"job output\n"


@pytest.mark.mlflow
def test_without_the_extra_the_proxied_server_still_gets_the_log(home, mlflow_server, monkeypatch, canary):
    from runner.trackers import handshake as tracker_runs

    monkeypatch.setattr(importlib.import_module("runner.trackers.mlflow.client"), "installed", lambda: False)
    planned = _planned(home, {"MLFLOW_TRACKING_URI": mlflow_server, **canary})
    hs = tracker_runs.begin(planned.plan, _output(planned))
    hs.finish(1, b"token " + canary["HF_TOKEN"].encode() + b"\n")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server)
    run_id = hs.env["MLFLOW_RUN_ID"]
    assert client.get_run(run_id).info.status == "FAILED"
    log = Path(client.download_artifacts(run_id, "primus-runner/job-output.log", str(home))).read_bytes()
    assert log == b"token ***\n"


class _DatabricksFront(Server):
    """A Databricks workspace stand-in on loopback: its OAuth endpoints (OIDC discovery, client-credentials
    token), and /api/ forwarded to a real MLflow server; records what each request carried."""

    ACCESS_TOKEN = "oauth-access-" + uuid.uuid4().hex

    def __init__(self, backend: str, dbfs: bool = False):
        self.backend, self.dbfs = backend, dbfs
        super().__init__(type(self)._answer)

    @property
    def signed(self) -> list[dict]:
        """The uploads to a signed URL (the cloud store's side: it takes what the signature allows)."""
        return [r for r in self.requests if r["path"].startswith("/signed/")]

    def calls(self, prefix: str) -> list[tuple[str, bytes]]:
        """(Authorization, body) of every request whose path starts with ``prefix``."""
        return [(_header(r, "Authorization"), r["body"]) for r in self.requests if r["path"].startswith(prefix)]

    def _answer(self, request: dict) -> tuple[int, dict, bytes]:
        path, body = request["path"], request["body"]
        if path.startswith("/.well-known/databricks-config"):  # host metadata: where OIDC lives
            return _json(200, {"oidc_endpoint": self.url + "/oidc", "workspace_id": "1"})
        if path.startswith("/oidc/.well-known/oauth-authorization-server"):
            return _json(200, {"authorization_endpoint": self.url + "/oidc/v1/authorize",
                               "token_endpoint": self.url + "/oidc/v1/token"})
        if path.startswith("/oidc/v1/token"):
            return _json(200, {"access_token": self.ACCESS_TOKEN, "token_type": "Bearer", "expires_in": 3600})
        if path.startswith("/signed/"):
            return 200, {"Content-Type": "text/plain"}, b""
        if self.dbfs and path.startswith("/api/2.0/mlflow/artifacts/credentials-for-write"):
            return _json(200, {"credential_infos": [
                {"path": p, "signed_uri": f"{self.url}/signed/{p}?X-Amz-Signature=stand-in", "type": "AWS_PRESIGNED_URL",
                 "headers": [{"name": "x-amz-server-side-encryption", "value": "AES256"}]} for p in json.loads(body)["path"]]})
        if not path.startswith("/api/"):
            return _json(404, {})
        req = urllib.request.Request(self.backend + path, data=body or None, method=request["method"],
                                     headers={"Content-Type": _header(request, "Content-Type") or "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                answer = r.read()
                if self.dbfs:  # Databricks-managed runs keep their artifacts under its DBFS tracking root
                    answer = re.sub(rb'"artifact_uri": ?"[^"]*/([0-9a-f]{32})/artifacts"',
                                    rb'"artifact_uri": "dbfs:/databricks/mlflow-tracking/0/\1/artifacts"', answer)
                return r.status, {"Content-Type": r.headers.get("Content-Type") or "application/json"}, answer
        except urllib.error.HTTPError as exc:
            return exc.code, {"Content-Type": "application/json"}, exc.read()


def _json(status: int, body: dict) -> tuple[int, dict, bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def _header(request: dict, name: str) -> str:
    return next((v for k, v in request["headers"].items() if k.lower() == name.lower()), "")


@pytest.fixture
def databricks(mlflow_server):
    front = _DatabricksFront(str(mlflow_server))
    yield front
    front.close()



@pytest.mark.mlflow
@pytest.mark.parametrize("sign_in", ["token", "oauth-m2m", "profile-token", "profile-oauth"])
def test_every_databricks_sign_in_creates_and_closes_the_run(home, databricks, mlflow_server, sign_in, capfd):
    """Through MlflowClient and the Databricks SDK, as users sign in; check --online first."""
    from runner.trackers import handshake as tracker_runs

    token, client_secret = "dapi-canary-" + uuid.uuid4().hex, "dose-canary-" + uuid.uuid4().hex
    host: dict[str, str] = {}
    if sign_in == "token":
        host = {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": databricks.url, "DATABRICKS_TOKEN": token}
    elif sign_in == "oauth-m2m":
        host = {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": databricks.url, "DATABRICKS_CLIENT_ID": "cid",
                "DATABRICKS_CLIENT_SECRET": client_secret}
    else:
        auth = f"token = {token}" if sign_in == "profile-token" else f"client_id = cid\nclient_secret = {client_secret}"
        (home / ".databrickscfg").write_text(f"[team]\nhost = {databricks.url}\n{auth}\n")
        os.chmod(home / ".databrickscfg", 0o600)
        host = {"MLFLOW_TRACKING_URI": "databricks://team"}
    planned = _planned(home, host, "  disable_mlflow: false\n")
    [checked] = tracker_runs.online_check(planned.plan, timeout=10)
    assert checked["status"] == "reachable", checked
    hs = tracker_runs.begin(planned.plan, _output(planned))
    run_id = hs.env["MLFLOW_RUN_ID"]
    assert hs.links["mlflow"] == f"{databricks.url}/ml/experiments/{hs.env['MLFLOW_EXPERIMENT_ID']}/runs/{run_id}"
    hs.finish(143, b"")
    from mlflow.tracking import MlflowClient

    assert MlflowClient(tracking_uri=str(mlflow_server)).get_run(run_id).info.status == "KILLED"
    api = [auth for auth, _ in databricks.calls("/api/")]
    expected = "Bearer " + (token if "token" in sign_in else databricks.ACCESS_TOKEN)
    assert api and all(a == expected for a in api), "every API call carries the sign-in's token"
    if "oauth" in sign_in:  # the client secret went to the token endpoint only
        assert all(client_secret not in _header(r, "Authorization") + r["body"].decode("latin-1")
                   for r in databricks.requests if not r["path"].startswith("/oidc/v1/token"))
    captured = capfd.readouterr()
    assert_no_leak(captured.out + captured.err, [token, client_secret, databricks.ACCESS_TOKEN], "the runner's output")
    assert "View run" not in captured.out


@pytest.mark.mlflow
def test_databricks_token_puts_the_log_to_the_signed_url_without_the_client(home, mlflow_server, monkeypatch, canary, capsys):
    """A Databricks-managed run's artifacts (dbfs:/databricks/mlflow-tracking/...) over REST: an upload URL
    signed by Databricks, the log PUT there with its headers and without the Databricks token (before, this
    needed the MLflow client, and without it the log was not uploaded)."""
    from runner.trackers import handshake as tracker_runs

    monkeypatch.setattr(importlib.import_module("runner.trackers.mlflow.client"), "installed", lambda: False)
    front = _DatabricksFront(str(mlflow_server), dbfs=True)
    token = canary["DATABRICKS_TOKEN"]
    try:
        planned = _planned(home, {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": front.url, **canary})
        hs = tracker_runs.begin(planned.plan, _output(planned))
        hs.finish(0, b"token " + canary["HF_TOKEN"].encode() + b"\n")
    finally:
        front.close()
    assert "warning" not in capsys.readouterr().err.lower()
    [upload] = front.signed
    path, body = upload["path"], upload["body"]
    headers = {k.lower(): v for k, v in upload["headers"].items()}
    assert path.split("?")[0] == "/signed/primus-runner/job-output.log" and body == b"token ***\n"
    assert "authorization" not in headers and headers.get("x-amz-server-side-encryption") == "AES256"
    assert "content-type" not in headers  # signed without one: none is sent
    writes = [json.loads(b) for _, b in front.calls("/api/2.0/mlflow/artifacts/credentials-for-write")]
    assert writes == [{"run_id": hs.env["MLFLOW_RUN_ID"], "path": ["primus-runner/job-output.log"]}]
    assert all(auth == "Bearer " + token for auth, _ in front.calls("/api/"))
    assert_no_leak(body + json.dumps(headers).encode(), canary, "the upload to the signed URL")


# ------------------------------------------------------------------ submit: the handshake once, on the submitting host

SLURM_CONFIG = """container:
  options:
    image: {image}
    group-add: []
    privileged: false
    ulimit: "nofile=1024:1024"
slurm:
  partition: {partition}
  nodes: 2
  time: "5"
  master_port: 29511
trackers:
  framework: generic
""" + MLFLOW_TRACKERS


@pytest.mark.slurm
@pytest.mark.docker
@pytest.mark.mlflow
@pytest.mark.parametrize("code,status", [(0, "FINISHED"), (3, "FAILED")])
def test_submit_wait_logs_into_one_run_from_both_nodes(tmp_path_factory, monkeypatch, store, slurm_cluster, busybox_image, code, status):
    import sys

    kind, uri, env, secrets = store
    experiment, run_name = unique("exp"), unique("run")
    work = tmp_path_factory.mktemp("slurm-mlflow")  # slurmd reads the job directory
    (work / ".primus.yaml").write_text(SLURM_CONFIG.format(image=busybox_image, partition=slurm_cluster.partition,
                                                          experiment=experiment, run_name=run_name))
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "WANDB_", "DATABRICKS_", "AWS_", "HF_"))}
    run_env.update(HOME=str(work), NO_COLOR="1", MLFLOW_TRACKING_URI=uri, **env, **secrets)
    done = subprocess.run([sys.executable, "-m", "runner", "submit", "--gpu", "none", "--wait", "--", "sh", "-c", JOB, "job", str(code)],
                          cwd=work, env=run_env, capture_output=True, timeout=420)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == code, err
    assert_no_leak(done.stdout + done.stderr, secrets, "submit's output")
    client = _reader(monkeypatch, uri, env, secrets)
    log = Path(client.download_artifacts(*_only_run(client, experiment), "primus-runner/job-output.log", str(work / "dl"))).read_bytes()
    run_ids = set(re.findall(rb"run=([0-9a-f]{32})", log))
    # Both nodes log into one run. A failing rank makes srun stop the other one, which may not have logged yet.
    assert len(run_ids) == 1 and log.count(b"metric-logged") >= (2 if code == 0 else 1), log
    run = client.get_run(run_ids.pop().decode())
    assert run.info.status == status and run.data.metrics == {"loss": 1.5}
    assert_no_leak(_everything(client, run.info.run_id, work / "all"), secrets, f"the MLflow run on the {kind} store (submit)")


def _only_run(client, experiment: str) -> tuple[str]:
    [run] = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    return (run.info.run_id,)


# ------------------------------------------------------------------ the job's own client writes to the S3 store

from job_images import job_image, s3_job_image  # noqa: E402,F401  (the tracker job image fixtures)

PY_JOB = """
import os, sys, mlflow
run_id = os.environ["MLFLOW_RUN_ID"]  # mlflow's start_run takes it out of the environment
mlflow.log_metric("loss", 0.5)
with open("/tmp/model.txt", "w") as f:
    f.write("weights\\n")
mlflow.log_artifact("/tmp/model.txt", artifact_path="job")
print("aws", os.environ["AWS_SECRET_ACCESS_KEY"])
print("logged", run_id, mlflow.active_run().info.run_id == run_id)
"""


@pytest.mark.docker
@pytest.mark.mlflow
def test_the_jobs_own_client_logs_artifacts_to_s3_with_the_forwarded_keys(tmp_path, monkeypatch, s3_store_server, s3_endpoint, s3_job_image, canary):
    secrets = {**canary, "AWS_SECRET_ACCESS_KEY": f"canary-aws-secret-{uuid.uuid4().hex}"}
    env = {"MLFLOW_S3_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "primus-test-key-id", "AWS_DEFAULT_REGION": "us-east-1"}
    experiment, run_name, name = unique("exp"), unique("run"), unique("s3j")
    ws = _workspace(tmp_path, secrets, {**env, "MLFLOW_TRACKING_URI": s3_store_server}, experiment, run_name)
    try:
        done = ws.run("up", "--image", s3_job_image, "--name", name, "--", "python3", "-c", PY_JOB, timeout=300)
    finally:
        force_remove(name)
    assert done.returncode == 0, done.stderr.decode()
    assert b"aws ***" in done.stdout
    run_id = re.search(rb"logged ([0-9a-f]{32}) True", done.stdout).group(1).decode()  # the runner's run
    client = _reader(monkeypatch, s3_store_server, env, secrets)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.metrics == {"loss": 0.5}
    assert sorted(a.path for a in client.list_artifacts(run_id)) == ["job", "primus-runner"]
    assert_no_leak(_everything(client, run_id, tmp_path / "all"), secrets, "the MLflow run on the S3 store (job's artifacts)")
    assert_no_leak(_s3_objects(s3_endpoint, secrets), secrets, "the S3 bucket")


# ------------------------------------------------------------------ the handshake's own work: what it imports, per store

# A fresh interpreter (pytest itself has imported mlflow) runs the handshake of one launch and says which
# heavy clients it loaded: the MLflow client costs seconds, more than a short job.
HANDSHAKE = r"""
import json, os, sys
from runner.config import load_config
from runner.config.envfile import EnvFile
from runner.plan import LaunchFlags, build_plan
from runner.trackers import handshake as runs
from runner.ui import Output

planned = build_plan(load_config(), ["true"], dict(os.environ), EnvFile(None), LaunchFlags(gpu="none"), name=sys.argv[1])
assert not planned.problems, planned.problems
runs.prefetch(planned.plan)
hs = runs.begin(planned.plan, Output(masker=planned.scope.masker))
hs.finish(int(sys.argv[2]), b"handshake log line\n")
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"mlflow", "boto3", "botocore", "databricks"})
print(json.dumps({"env": hs.env, "link": hs.links.get("mlflow"), "heavy": heavy}))
"""


@pytest.fixture(params=["proxied", "local", "file", "databricks-token", "s3"])
def light_store(request, tmp_path):
    """(kind, tracking URI the runner reads, env, the URI to read the run back with, heavy modules allowed)."""
    kind = request.param
    if kind == "proxied":
        uri = str(request.getfixturevalue("mlflow_server"))
        return kind, {"MLFLOW_TRACKING_URI": uri}, uri, []
    if kind == "local":
        uri = request.getfixturevalue("local_store_server")[0]
        return kind, {"MLFLOW_TRACKING_URI": uri}, uri, []
    if kind == "file":
        root = tmp_path / "mlruns"
        root.mkdir()
        return kind, {"MLFLOW_TRACKING_URI": root.as_uri()}, root.as_uri(), []
    if kind == "databricks-token":  # an MLflow server answers Databricks' MLflow REST API under the same paths
        uri = str(request.getfixturevalue("mlflow_server"))
        env = {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": uri, "DATABRICKS_TOKEN": "dapi-canary-" + uuid.uuid4().hex}
        return kind, env, uri, []
    uri = request.getfixturevalue("s3_store_server")
    env = {"MLFLOW_TRACKING_URI": uri, "MLFLOW_S3_ENDPOINT_URL": request.getfixturevalue("s3_endpoint"),
           "AWS_ACCESS_KEY_ID": "primus-test-key-id", "AWS_SECRET_ACCESS_KEY": "canary-aws-" + uuid.uuid4().hex, "AWS_DEFAULT_REGION": "us-east-1"}
    return kind, env, uri, ["boto3", "botocore"]  # the floor on S3: its own client, and nothing of MLflow


@pytest.mark.mlflow
@pytest.mark.parametrize("code,status", [(0, "FINISHED"), (143, "KILLED")])
def test_the_handshake_and_log_upload_load_no_mlflow_client(tmp_path, monkeypatch, light_store, code, status):
    import sys

    kind, env, read_uri, allowed = light_store
    work = tmp_path / "work"
    work.mkdir()
    (work / ".primus.yaml").write_text("container:\n  options:\n    image: img\ntrackers:\n  framework: generic\n"
                                       "  disable_mlflow: false\n  mlflow_upload_logs: true\n")
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "AWS_", "DATABRICKS_"))}
    run_env.update(HOME=str(work), NO_COLOR="1", **env)
    done = subprocess.run([sys.executable, "-c", HANDSHAKE, unique("light"), str(code)], cwd=work, env=run_env,
                          capture_output=True, timeout=180)
    assert done.returncode == 0, done.stderr.decode()
    assert b"warning" not in done.stderr.lower(), done.stderr.decode()  # the log was written, not degraded
    result = json.loads(done.stdout.decode().splitlines()[-1])
    assert result["heavy"] == allowed, f"{kind}: the handshake imported {result['heavy']}"

    reader_env = {k: v for k, v in env.items() if k != "MLFLOW_TRACKING_URI" and not k.startswith("DATABRICKS_")}
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow's own client reads a file store only when asked to
    client = _reader(monkeypatch, read_uri, reader_env, {k: v for k, v in env.items() if k.startswith("AWS_SECRET")})
    run_id = result["env"]["MLFLOW_RUN_ID"]
    run = client.get_run(run_id)
    assert run.info.status == status and run.info.experiment_id == result["env"]["MLFLOW_EXPERIMENT_ID"]
    assert run.data.tags["primus-runner.job"].startswith("light")
    log = Path(client.download_artifacts(run_id, "primus-runner/job-output.log", str(tmp_path))).read_bytes()
    assert log == b"handshake log line\n"


# ------------------------------------------------------------------ a file: store gets the handshake too

FILE_JOB = """
import os, mlflow
given = os.environ["MLFLOW_RUN_ID"]  # start_run takes it out of the environment
mlflow.log_metric("loss", 0.25)
print("job-run", given, mlflow.active_run().info.run_id)
"""


@pytest.mark.docker
@pytest.mark.mlflow
@pytest.mark.parametrize("mount", ["same-path", "run-directory"])
def test_a_file_store_job_logs_into_the_run_the_runner_created(tmp_path, monkeypatch, job_image, canary, mount):
    """The job's own client (mlflow in the image) takes MLFLOW_RUN_ID: its metric lands in the runner's run, in
    the directory mounted at the same path, or (under no mount of the user's) mounted from the run's directory;
    the runner closes the run and writes the masked log beside it."""
    experiment, run_name, name = unique("exp"), unique("run"), unique("fs")
    if mount == "same-path":
        root = tmp_path / "mlruns"
        root.mkdir()
        uri, volume = root.as_uri(), ["--volume", f"{root}:{root}"]
    else:
        uri, volume = f"file:///primus-test-mlruns-{uuid.uuid4().hex[:8]}", []
    ws = _workspace(tmp_path, canary, {"MLFLOW_TRACKING_URI": uri}, experiment, run_name)
    try:
        done = ws.run("up", "--image", job_image, "--name", name, *volume, "--env", "MLFLOW_ALLOW_FILE_STORE=true",
                      "--", "python3", "-c", FILE_JOB + "print('hf', os.environ['HF_TOKEN'])", timeout=300)
    finally:
        force_remove(name)
    assert done.returncode == 0, done.stderr.decode()
    if mount == "run-directory":
        root = Path(re.search(rb"is on the host at (\S+) \(mounted from the run's directory\)", done.stderr).group(1).decode())
    given, active = re.search(rb"job-run ([0-9a-f]{32}) ([0-9a-f]{32})", done.stdout).groups()
    assert given == active  # the job's client took the run it was given
    [meta] = list(root.glob("*/*/meta.yaml"))  # one run in the store: the runner's, not a second one of the job's
    assert meta.parent.name == given.decode() and str(meta.parent).encode() in done.stderr  # the link the runner printed
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = _reader(monkeypatch, root.as_uri(), {}, {})  # the host's side: the paths it records are the job's
    run = client.get_run(given.decode())
    assert run.info.status == "FINISHED" and run.info.run_name == run_name and run.data.metrics == {"loss": 0.25}
    assert client.get_experiment(run.info.experiment_id).name == experiment
    assert run.info.artifact_uri == f"{uri}/{run.info.experiment_id}/{given.decode()}/artifacts"  # the job's view
    log = (meta.parent / "artifacts" / "primus-runner" / "job-output.log").read_bytes()
    assert b"job-run " + given in log and b"hf ***" in log
    blob = b"".join(p.read_bytes() for p in meta.parent.rglob("*") if p.is_file())  # meta, tags, metrics, the log
    assert_no_leak(blob, canary, "the MLflow run in the file store")
