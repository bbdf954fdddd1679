"""Secret references against real stores: a `pass` store with its own GPG key, moto's AWS
Secrets Manager server on loopback, a `cmd:` script, 0600 and 0644 files.

Stores come from ``bash .ci/setup-secret-stores.sh``; under CI=true a missing one fails.
Values are fresh canaries compared by checksum; every error and report is checked
for them (engines.assert_no_leak names the secret, never the value).
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from engine_fixtures import assert_no_leak, free_port, sha
from loopback_servers import silent_listener
from runner.errors import ConfigError, EngineUnavailable
from runner.secrets.refs.grammar import SecretRef
from runner.secrets.refs.resolve import check_refs, resolve
from secret_ref_helpers import canary, error_text, no_env, ref, script, secret_file
from secret_stores import isolated_aws_env, make_pass_store, remove_pass_store, start_moto_server


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def pass_store():
    store = make_pass_store()
    try:
        yield store
    finally:
        remove_pass_store(store)


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    server = start_moto_server(tmp_path_factory.mktemp("moto"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pass_env(pass_store, monkeypatch):
    """The runner's environment pointed at the test password store (children inherit it)."""
    for key, value in pass_store.env.items():
        monkeypatch.setenv(key, value)
    return pass_store


@pytest.fixture
def aws_env(moto, tmp_path, monkeypatch):
    """The runner's environment pointed at the moto server, with dummy keys and no ~/.aws."""
    for key, value in {**moto.env, **isolated_aws_env(tmp_path)}.items():
        monkeypatch.setenv(key, value)
    return moto


@pytest.fixture
def stores_env(pass_env, aws_env):
    return pass_env, aws_env


def new_secret(moto, value: str) -> tuple[str, str]:
    """Create a secret with a unique name; (name, ARN)."""
    name = f"primus/test-{uuid.uuid4().hex[:12]}"
    arn = moto.client().create_secret(Name=name, SecretString=value)["ARN"]
    return name, arn


# ------------------------------------------------------------------ pass


def test_pass_gives_the_first_line_exactly(pass_env):
    store = pass_env
    value = canary("pass") + " ünï"
    store.insert("ml/hf", value + "\nlogin: someone\nurl: https://huggingface.co\n")
    got = resolve([ref("HF_TOKEN", "pass:ml/hf")], no_env)
    assert sha(got["HF_TOKEN"].reveal()) == sha(value)


def test_pass_missing_entry_is_exit_2_naming_the_reference(pass_env):
    store = pass_env
    other = canary("pass-other")
    store.insert("ml/other", other + "\n")
    with pytest.raises(ConfigError) as info:
        resolve([ref("HF_TOKEN", "pass:ml/absent")], no_env)
    text = error_text(info.value)
    assert info.value.exit_code == 2
    assert "HF_TOKEN (pass:ml/absent)" in text and "not in the password store" in text
    assert_no_leak(text, {"ml/other": other}, "the missing pass entry error")


def test_pass_folder_is_not_an_entry_exit_2(pass_env):
    # `pass show FOLDER` lists the folder and exits 0; its first line is not a value.
    pass_env.insert("team/ml/hf", canary("in-folder") + "\n")
    with pytest.raises(ConfigError) as info:
        resolve([ref("HF_TOKEN", "pass:team/ml")], no_env)
    assert "HF_TOKEN (pass:team/ml): a folder of the password store" in info.value.message


def test_pass_without_the_key_is_exit_2(pass_env, tmp_path, monkeypatch):
    store = pass_env
    store.insert("ml/locked", canary("locked") + "\n")
    empty_home = tmp_path / "gnupg-empty"
    empty_home.mkdir(mode=0o700)
    monkeypatch.setenv("GNUPGHOME", str(empty_home))  # a store this user cannot decrypt
    try:
        with pytest.raises(ConfigError) as info:
            resolve([ref("HF_TOKEN", "pass:ml/locked")], no_env)
    finally:
        import subprocess

        subprocess.run(["gpgconf", "--homedir", str(empty_home), "--kill", "all"], capture_output=True, timeout=30)
    assert "HF_TOKEN (pass:ml/locked)" in info.value.message and "pass show exited with" in info.value.message


def test_pass_not_installed_is_exit_1(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `pass` here
    with pytest.raises(EngineUnavailable) as info:
        resolve([ref("HF_TOKEN", "pass:ml/hf")], no_env)
    assert info.value.exit_code == 1 and "HF_TOKEN (pass:ml/hf)" in info.value.message


# ------------------------------------------------------------------ aws-sm


def test_aws_sm_plain_and_json_key_and_arn_exactly(aws_env, monkeypatch):
    moto = aws_env
    plain = canary("aws-plain") + " ünï"
    api_key = canary("aws-json")
    plain_name, _ = new_secret(moto, plain)
    json_name, json_arn = new_secret(moto, json.dumps({"api_key": api_key, "user": "ml", "port": 8443}))
    refs = [
        ref("PLAIN", f"aws-sm:{plain_name}"),
        ref("WANDB_API_KEY", f"aws-sm:{json_name}#api_key"),
        ref("PORT", f"aws-sm:{json_name}#port"),
    ]
    got = resolve(refs, no_env)
    assert sha(got["PLAIN"].reveal()) == sha(plain)
    assert sha(got["WANDB_API_KEY"].reveal()) == sha(api_key)
    assert got["PORT"].reveal() == "8443"
    # An ARN names its region: no AWS_REGION needed.
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    got = resolve([ref("BY_ARN", f"aws-sm:{json_arn}#api_key")], no_env)
    assert sha(got["BY_ARN"].reveal()) == sha(api_key)


def test_aws_sm_missing_secret_key_or_json_are_exit_2_without_values(aws_env):
    moto = aws_env
    values = {"password": canary("aws-password"), "plain": canary("aws-not-json")}
    json_name, _ = new_secret(moto, json.dumps({"password": values["password"]}))
    plain_name, _ = new_secret(moto, values["plain"])
    refs = [
        ref("ABSENT", "aws-sm:primus/does-not-exist"),
        ref("NO_KEY", f"aws-sm:{json_name}#api_key"),
        ref("NOT_JSON", f"aws-sm:{plain_name}#api_key"),
    ]
    with pytest.raises(ConfigError) as info:
        resolve(refs, no_env)
    text = error_text(info.value)
    assert_no_leak(text, values, "the aws-sm errors")
    assert len(info.value.problems) == 3
    assert "ABSENT (aws-sm:primus/does-not-exist): no such secret" in text
    assert f"NO_KEY (aws-sm:{json_name}#api_key): the secret has no JSON key 'api_key'" in text
    assert f"NOT_JSON (aws-sm:{plain_name}#api_key): the secret is not JSON" in text


def test_aws_sm_with_the_store_stopped_is_exit_1_naming_the_reference(tmp_path, monkeypatch):
    server = start_moto_server(tmp_path / "moto-stopped")
    for key, value in {**server.env, **isolated_aws_env(tmp_path)}.items():
        monkeypatch.setenv(key, value)
    name, _ = new_secret(server, canary("stopped"))
    assert resolve([ref("T", f"aws-sm:{name}")], no_env)["T"]  # reachable while it runs
    server.stop()
    with pytest.raises(EngineUnavailable) as info:
        resolve([ref("WANDB_API_KEY", f"aws-sm:{name}#api_key"), ref("OTHER", f"aws-sm:{name}")], no_env)
    assert info.value.exit_code == 1
    assert f"WANDB_API_KEY (aws-sm:{name}#api_key)" in info.value.message
    assert f"OTHER (aws-sm:{name})" in info.value.message


def test_aws_sm_endpoint_that_never_answers_times_out_exit_1(tmp_path, monkeypatch):
    with silent_listener() as port:
        env = {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1", **isolated_aws_env(tmp_path),
        }
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        _require_boto3()
        with pytest.raises(EngineUnavailable) as info:
            resolve([ref("WANDB_API_KEY", "aws-sm:prod/wandb#api_key")], no_env, timeout=1.0)
    assert "WANDB_API_KEY (aws-sm:prod/wandb#api_key)" in info.value.message


def test_aws_sm_connection_refused_is_exit_1(tmp_path, monkeypatch):
    _require_boto3()
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}", "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1", **isolated_aws_env(tmp_path),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(EngineUnavailable) as info:
        resolve([ref("WANDB_API_KEY", "aws-sm:prod/wandb")], no_env, timeout=5.0)
    assert "WANDB_API_KEY (aws-sm:prod/wandb)" in info.value.message and "not reachable" in info.value.message


def test_aws_sm_without_boto3_is_exit_1_with_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)  # `import boto3` raises ImportError
    with pytest.raises(EngineUnavailable) as info:
        resolve([ref("WANDB_API_KEY", "aws-sm:prod/wandb#api_key"), ref("OK", "env:A")], {"A": "a-value"}.get)
    assert "WANDB_API_KEY (aws-sm:prod/wandb#api_key)" in info.value.message
    assert "pip install 'primus-runner[aws]'" in info.value.message


def _require_boto3() -> None:
    try:
        import boto3  # noqa: F401
    except ImportError:
        from engine_fixtures import engine_missing

        engine_missing("boto3", "bash .ci/setup-secret-stores.sh")


# ------------------------------------------------------------------ all sources together


def _five_sources(stores_env, tmp_path: Path) -> tuple[list[SecretRef], dict[str, str], dict[str, str]]:
    store, moto = stores_env
    values = {name: canary(name.lower()) for name in
              ("HF_TOKEN", "WANDB_API_KEY", "DATABRICKS_TOKEN", "MLFLOW_TRACKING_TOKEN", "GH_TOKEN")}
    store.insert("ml/hf", values["HF_TOKEN"] + "\n")
    wandb, _ = new_secret(moto, json.dumps({"api_key": values["WANDB_API_KEY"]}))
    vault = secret_file(tmp_path / "vault-data", values["DATABRICKS_TOKEN"] + "\n")
    fake_op = script(tmp_path / "op", f"# op read op://ml/databricks/token\ncat {vault}\n")
    mlflow = secret_file(tmp_path / "mlflow-token", values["MLFLOW_TRACKING_TOKEN"] + "\n")
    env = {"GITHUB_TOKEN": values["GH_TOKEN"]}
    refs = [
        ref("HF_TOKEN", "pass:ml/hf"),
        ref("WANDB_API_KEY", f"aws-sm:{wandb}#api_key"),
        ref("DATABRICKS_TOKEN", f"cmd:{fake_op} read op://ml/databricks/token"),
        ref("MLFLOW_TRACKING_TOKEN", f"file:{mlflow}"),
        ref("GH_TOKEN", "env:GITHUB_TOKEN"),
    ]
    return refs, values, env


def test_five_sources_resolve_together_exactly(stores_env, tmp_path):
    refs, values, env = _five_sources(stores_env, tmp_path)
    got = resolve(refs, env.get)
    assert {name: sha(secret.reveal()) for name, secret in got.items()} == {n: sha(v) for n, v in values.items()}
    report = check_refs(refs, env.get, 10.0)
    assert [(r["name"], r["found"], r["error"]) for r in report] == [(r.name, True, None) for r in refs]
    assert [r["source"] for r in report] == [r.source for r in refs]
    assert_no_leak(json.dumps(report), values, "check_refs report")


def test_five_sources_failing_together_are_listed_at_once(stores_env, tmp_path):
    refs, values, env = _five_sources(stores_env, tmp_path)
    store, _ = stores_env
    store.remove("ml/hf")
    broken = [
        refs[0],  # its entry removed above
        ref("WANDB_API_KEY", refs[1].source.replace("#api_key", "#missing")),
        refs[2],  # the program fails (below)
        refs[3],  # the file becomes readable by others (below)
        refs[4],  # looked up in an empty environment
    ]
    fake_op = Path(refs[2].target.split()[0])
    fake_op.write_text(fake_op.read_text().replace("cat ", "echo 'op: not signed in' >&2; exit 1; cat "))
    Path(refs[3].target).chmod(0o644)
    with pytest.raises(ConfigError) as info:
        resolve(broken, {}.get)
    text = error_text(info.value)
    assert_no_leak(text, values, "the five-failures error")
    assert info.value.exit_code == 2
    assert [p.where for p in info.value.problems] == [f"test:{r.name}" for r in broken]
    for r in broken:
        assert f"{r.name} ({r.source})" in text
    assert "op: not signed in" in text


def test_aws_sm_values_stay_out_of_debug_logs(aws_env, caplog):
    # An application (or a user's sitecustomize) that turns on DEBUG logging must not get
    # botocore's "Response body: …" lines, which would hold the secret.
    import logging

    moto = aws_env
    value = canary("aws-debug-log")
    name, _ = new_secret(moto, json.dumps({"api_key": value}))
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("botocore").setLevel(logging.DEBUG)
        got = resolve([ref("WANDB_API_KEY", f"aws-sm:{name}#api_key")], no_env)
    assert sha(got["WANDB_API_KEY"].reveal()) == sha(value)
    assert any(r.name.startswith("botocore") for r in caplog.records)  # logging was on
    assert_no_leak("\n".join(r.getMessage() for r in caplog.records), {"WANDB_API_KEY": value}, "botocore's debug log")
