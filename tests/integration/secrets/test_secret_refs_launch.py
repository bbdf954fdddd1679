"""Secret references end to end: `up` and `submit` resolve each source (pass, aws-sm on moto,
cmd:, file:, env:) in memory; the job receives each exact value (checked by checksum inside
the job) while no output, file, command line, `docker inspect`, Slurm file or report holds it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import uuid
from pathlib import Path

import pytest

from cli_runner import run_cli
from engine_fixtures import assert_no_leak, unprivileged_container_yaml
from secret_stores import isolated_aws_env, make_pass_store, remove_pass_store, start_moto_server

pytestmark = [pytest.mark.docker]

NAMES = ("HF_TOKEN", "WANDB_API_KEY", "DATABRICKS_TOKEN", "MLFLOW_TRACKING_TOKEN", "GH_TOKEN")


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """One value per source, each a canary that exists only in its store."""
    work = tmp_path_factory.mktemp("refs")
    values = {name: f"canary-ref-{name.lower()}-{uuid.uuid4().hex[:16]}" for name in NAMES}
    store = make_pass_store()
    moto = start_moto_server(work / "moto")
    try:
        store.insert("ml/hf", values["HF_TOKEN"] + "\nnotes: second line is not the secret\n")
        moto.client().create_secret(Name="prod/wandb", SecretString=json.dumps({"api_key": values["WANDB_API_KEY"]}))
        program = work / "vault-read"
        # The value lives in a file only the program reads: it never appears in its argv.
        (work / "vault-data").write_text(values["DATABRICKS_TOKEN"] + "\n")
        program.write_text(f"#!/bin/sh\ncat {work / 'vault-data'}\n")
        program.chmod(0o700)
        token_file = work / "mlflow-token"
        token_file.write_text(values["MLFLOW_TRACKING_TOKEN"] + "\n")
        token_file.chmod(0o600)
        env = {**store.env, **moto.env, **isolated_aws_env(work), "OTHER_GH": values["GH_TOKEN"]}
        config = f"""\
secrets:
  HF_TOKEN: pass:ml/hf
  WANDB_API_KEY: aws-sm:prod/wandb#api_key
  DATABRICKS_TOKEN: cmd:{program} --field token
  MLFLOW_TRACKING_TOKEN: file:{token_file}
  GH_TOKEN: env:OTHER_GH
"""
        yield values, env, config, store, moto
    finally:
        moto.stop()
        remove_pass_store(store)


JOB = " ; ".join(f'printf "{n}=%s\\n" "$(printf %s "${n}" | sha256sum | cut -d" " -f1)"' for n in NAMES)


def _project(tmp_path: Path, config: str, image: str, extra: str = "") -> Path:
    (tmp_path / ".primus.yaml").write_text(config + unprivileged_container_yaml(image, list(NAMES)) + extra)
    return tmp_path


def _run(project: Path, env: dict, *args: str, timeout: float = 300):
    return run_cli(project, *args, env=env, unset=tuple(NAMES), text=False, timeout=timeout)


def _digests(values: dict) -> dict:
    return {n: hashlib.sha256(v.encode()).hexdigest() for n, v in values.items()}


def _files_clean(root: Path, values: dict) -> None:
    for path in root.rglob("*"):
        if path.is_file() and path.name not in ("vault-data", "mlflow-token"):
            assert_no_leak(path.read_bytes(), values, str(path))


def test_up_hands_each_source_to_the_job_and_nowhere_else(tmp_path, stores, busybox_image):
    values, env, config, _, _ = stores
    project = _project(tmp_path, config, busybox_image)
    name = f"refs-{uuid.uuid4().hex[:8]}"
    seen: list[bytes] = []
    stop = threading.Event()

    def scan_cmdlines():  # every process's command line while the launch runs
        while not stop.is_set():
            for proc in Path("/proc").iterdir():
                try:
                    seen.append((proc / "cmdline").read_bytes())
                except OSError:
                    pass

    scanner = threading.Thread(target=scan_cmdlines, daemon=True)
    scanner.start()
    try:
        result = _run(project, env, "up", "--keep", "--name", name, "--report", "report.json", "--", "sh", "-c", JOB + "; sleep 1")
    finally:
        stop.set()
        scanner.join()
    try:
        assert result.returncode == 0, result.stderr.decode()[-2000:]
        for n, digest in _digests(values).items():
            assert f"{n}={digest}".encode() in result.stdout, f"the job did not receive {n} exactly"
        assert_no_leak(result.stdout + result.stderr, values, "up's output")
        inspect = subprocess.run(["docker", "inspect", name], capture_output=True, check=True).stdout
        assert_no_leak(inspect, values, "docker inspect")
        assert_no_leak(b"\n".join(seen), values, "process command lines")
        _files_clean(project, values)
        report = json.loads((project / "report.json").read_text())
        assert report["plan"]["env_sources"]["HF_TOKEN"]["source"] == "pass:ml/hf"
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def test_plan_and_check_show_sources_never_values(tmp_path, stores, busybox_image):
    values, env, config, _, _ = stores
    project = _project(tmp_path, config, busybox_image)
    plan = _run(project, env, "--json", "plan", "--", "true")
    assert plan.returncode == 0, plan.stderr.decode()
    doc = json.loads(plan.stdout)
    assert {n: doc["env"][n] for n in NAMES} == {n: "***" for n in NAMES}
    assert doc["env_sources"]["WANDB_API_KEY"]["source"] == "aws-sm:prod/wandb#api_key"
    check = _run(project, env, "--json", "check", "--", "true")
    report = json.loads(check.stdout)
    assert {item["name"]: item["found"] for item in report["secrets"]} == {n: True for n in NAMES}
    assert_no_leak(plan.stdout + plan.stderr + check.stdout + check.stderr, values, "plan and check")


def test_failures_name_the_reference_with_their_exit_codes(tmp_path, stores, busybox_image):
    values, env, config, store, moto = stores
    project = _project(tmp_path, config.replace("pass:ml/hf", "pass:ml/absent").replace("#api_key", "#no_such_key"), busybox_image)
    result = _run(project, env, "up", "--", "true")
    assert result.returncode == 2, result.stderr.decode()
    err = result.stderr.decode()
    assert "pass:ml/absent" in err and "aws-sm:prod/wandb#no_such_key" in err, "every failure, at once"
    assert_no_leak(result.stdout + result.stderr, values, "the failure message")
    assert b"Traceback" not in result.stderr
    # A store that does not answer is exit 1 (engine unavailable), nothing launched.
    project = _project(tmp_path, config, busybox_image)
    unreachable = {**env, "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    result = _run(project, unreachable, "up", "--", "true")
    assert result.returncode == 1, result.stderr.decode()
    assert b"aws-sm:prod/wandb#api_key" in result.stderr and b"Traceback" not in result.stderr


@pytest.mark.slurm
def test_submit_resolves_on_the_submitting_host_and_both_nodes_get_the_values(tmp_path_factory, stores, busybox_image, slurm_cluster):
    values, env, config, _, _ = stores
    project = _project(tmp_path_factory.mktemp("refs-slurm"), config, busybox_image,
                       extra=f"slurm:\n  partition: {slurm_cluster.partition}\n  nodes: 2\n  time: \"5\"\n")
    result = _run(project, env, "submit", "--wait", "--report", "report.json", "--", "sh", "-c", JOB)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    for n, digest in _digests(values).items():
        assert result.stdout.count(f"{n}={digest}".encode()) == 2, f"both nodes get {n} exactly"
    assert_no_leak(result.stdout + result.stderr, values, "submit's output")
    _files_clean(project, values)  # batch script, plan file, slurm-%j.out, report


def test_logs_mask_and_audit_finds_values_from_references(tmp_path, stores, busybox_image):
    """`logs` and `audit` resolve the references too: a value a job printed from a store is
    masked in `logs`, and found by `audit` in a file (failed before: they knew env secrets only)."""
    values, env, config, _, _ = stores
    project = _project(tmp_path, config, busybox_image)
    name = f"refs-logs-{uuid.uuid4().hex[:8]}"
    try:
        started = _run(project, env, "up", "--detach", "--name", name, "--", "sh", "-c", 'echo "hf=$HF_TOKEN"')
        assert started.returncode == 0, started.stderr.decode()
        subprocess.run(["docker", "wait", name], capture_output=True, timeout=60)
        logs = _run(project, env, "logs", name)
        assert logs.returncode == 0 and b"hf=***" in logs.stdout, logs.stdout + logs.stderr
        assert_no_leak(logs.stdout + logs.stderr, values, "logs")
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    leak = project / "leaked.txt"
    leak.write_text(f"oops {values['HF_TOKEN']}\n")
    audit = _run(project, env, "--json", "audit", str(leak))
    assert audit.returncode == 4, audit.stderr.decode()
    assert {f["secret"] for f in json.loads(audit.stdout)["findings"]} == {"HF_TOKEN"}
    assert_no_leak(audit.stdout + audit.stderr, values, "audit's output")
