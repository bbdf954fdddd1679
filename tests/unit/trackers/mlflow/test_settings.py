"""What MLflow reads: a Databricks profile's host and key names (never a secret value), the URI forms,
and the file store the job writes (its place on the host named after the job)."""

from __future__ import annotations

from types import SimpleNamespace

from runner.trackers.mlflow.settings import SETTINGS, databricks_config_file, databricks_profile, is_databricks_uri, uri_profile

TOKEN = "settings-canary-dapi-51e0"


def test_a_profile_gives_its_host_and_the_names_of_its_keys_only(tmp_path):
    cfg = tmp_path / "databrickscfg"
    cfg.write_text(f"[DEFAULT]\nhost = https://default.example\n\n[prof]\nhost = https://prof.example\ntoken = {TOKEN}\n"
                   "client_id =\n")
    host, keys = databricks_profile("prof", str(cfg))
    assert host == "https://prof.example" and keys == {"host", "token"}  # an empty key is not set
    assert TOKEN not in repr(databricks_profile("prof", str(cfg)))
    assert databricks_profile("default", str(cfg)) == ("https://default.example", frozenset({"host"}))
    assert databricks_profile("absent", str(cfg)) is None
    assert databricks_profile("prof", str(tmp_path / "none")) is None
    (tmp_path / "broken").write_text("no section header\n")
    assert databricks_profile("prof", str(tmp_path / "broken")) is None


def test_the_config_file_is_the_variables_or_the_home_one(monkeypatch, tmp_path):
    assert databricks_config_file({"DATABRICKS_CONFIG_FILE": "/etc/dbx.cfg"}.get) == "/etc/dbx.cfg"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert databricks_config_file(lambda name: None) == str(tmp_path / ".databrickscfg")


def test_databricks_uri_forms():
    assert is_databricks_uri("databricks") and is_databricks_uri("databricks://prof:prefix")
    assert not is_databricks_uri("databricks-uc") and not is_databricks_uri("https://x.databricks.com")
    assert uri_profile("databricks://prof:prefix") == "prof" and uri_profile("databricks://prof") == "prof"
    assert uri_profile("databricks") == ""


def plan(uri):
    return SimpleNamespace(job=SimpleNamespace(public_env=lambda: {"MLFLOW_TRACKING_URI": uri} if uri else {}))


def test_a_file_store_is_an_output_the_job_writes():
    assert SETTINGS.outputs(plan("file:///workspace/mlruns")) == [("MLFLOW_TRACKING_URI", "/workspace/mlruns")]
    assert SETTINGS.outputs(plan("file:/workspace/mlruns")) == [("MLFLOW_TRACKING_URI", "/workspace/mlruns")]
    assert SETTINGS.outputs(plan("/workspace/mlruns")) == [("MLFLOW_TRACKING_URI", "/workspace/mlruns")]
    assert SETTINGS.outputs(plan("http://mlflow:5000")) == [] and SETTINGS.outputs(plan(None)) == []


def test_after_the_job_the_file_store_is_named_when_it_holds_something(tmp_path):
    assert SETTINGS.after_line(tmp_path, None, None) == "MLflow: the job wrote nothing to its file store"
    (tmp_path / "0").mkdir()
    (tmp_path / "0" / "meta.yaml").write_text("name: Default\n")
    assert SETTINGS.after_line(tmp_path, None, None) == f"MLflow file store: {tmp_path} (mlflow ui --backend-store-uri file:{tmp_path})"
