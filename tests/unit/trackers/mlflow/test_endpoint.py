"""Where the MLflow server is and how the runner signs in, read from the plan: which credential wins,
and the printable form that never holds a password."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from runner.secrets import Secret
from runner.trackers.mlflow.endpoint import display, endpoint, experiment_name, tracking_uri

PASSWORD = "endpoint-canary-pw-6a1d"
TOKEN = "endpoint-canary-token-b47e"


def plan(public=None, secret=None):
    public, secret = dict(public or {}), {k: Secret(v) for k, v in (secret or {}).items()}
    return SimpleNamespace(job=SimpleNamespace(public_env=lambda: public, secret_env=lambda: secret))


def test_the_token_wins_over_a_password_and_the_uris_userinfo():
    p = plan({"MLFLOW_TRACKING_URI": "https://u:other@mlflow.example/", "MLFLOW_TRACKING_USERNAME": "ann"},
             {"MLFLOW_TRACKING_TOKEN": TOKEN, "MLFLOW_TRACKING_PASSWORD": PASSWORD})
    ep = endpoint(p)
    assert (ep.base, ep.scheme, ep.secret.reveal()) == ("https://mlflow.example", "bearer", TOKEN)


def test_username_and_password_then_the_uris_own():
    ep = endpoint(plan({"MLFLOW_TRACKING_URI": "http://h:5000", "MLFLOW_TRACKING_USERNAME": "ann"},
                       {"MLFLOW_TRACKING_PASSWORD": PASSWORD}))
    assert (ep.scheme, ep.user, ep.secret.reveal()) == ("basic", "ann", PASSWORD)
    ep = endpoint(plan(secret={"MLFLOW_TRACKING_URI": f"http://bob:{PASSWORD}@h:5000/"}))
    assert (ep.base, ep.display, ep.scheme, ep.user, ep.secret.reveal()) == ("http://h:5000", "http://h:5000", "basic", "bob", PASSWORD)
    ep = endpoint(plan({"MLFLOW_TRACKING_URI": "http://h:5000", "MLFLOW_TRACKING_USERNAME": "ann"}))
    assert ep.scheme == "none" and ep.secret is None  # a user without a password sends nothing


def test_tls_settings_come_from_the_plan(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    ep = endpoint(plan({"MLFLOW_TRACKING_URI": "https://h", "MLFLOW_TRACKING_INSECURE_TLS": "true",
                        "MLFLOW_TRACKING_SERVER_CERT_PATH": str(ca)}))
    assert ep.insecure_tls and ep.cafile == str(ca)
    ep = endpoint(plan({"MLFLOW_TRACKING_URI": "https://h", "MLFLOW_TRACKING_SERVER_CERT_PATH": str(tmp_path / "absent")}))
    assert not ep.insecure_tls and ep.cafile is None


def test_databricks_over_rest_needs_its_host_and_token():
    ep = endpoint(plan({"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": "adb-1.azuredatabricks.net/"},
                       {"DATABRICKS_TOKEN": TOKEN}))
    assert (ep.base, ep.scheme, ep.secret.reveal()) == ("https://adb-1.azuredatabricks.net", "bearer", TOKEN)
    assert endpoint(plan({"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": "h"})) is None  # OAuth: the client's
    assert endpoint(plan({"MLFLOW_TRACKING_URI": "databricks://prof"}, {"DATABRICKS_TOKEN": TOKEN})) is None


@pytest.mark.parametrize("uri", ["file:///mlruns", "/mlruns", "sqlite:///m.db", ""])
def test_a_store_that_is_no_http_server_has_no_endpoint(uri):
    assert endpoint(plan({"MLFLOW_TRACKING_URI": uri})) is None


def test_the_printable_form_never_holds_the_password(tmp_path, monkeypatch):
    p = plan(secret={"MLFLOW_TRACKING_URI": f" https://bob:{PASSWORD}@h/prefix/ "})
    assert tracking_uri(p) == f"https://bob:{PASSWORD}@h/prefix/"
    assert display(p) == "https://h/prefix"
    assert display(plan({"MLFLOW_TRACKING_URI": "file:///mlruns"})) == "file:///mlruns"
    assert display(plan({"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": "dbc.example"})) == "https://dbc.example"
    cfg = tmp_path / "databrickscfg"
    cfg.write_text(f"[prof]\nhost = https://prof.example\ntoken = {TOKEN}\n")
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(cfg))
    shown = display(plan({"MLFLOW_TRACKING_URI": "databricks://prof"}))
    assert shown == "https://prof.example" and TOKEN not in shown


def test_the_experiment_by_name_or_by_id():
    assert experiment_name(plan({"MLFLOW_EXPERIMENT_NAME": "exp"})) == "exp"
    assert experiment_name(plan({"MLFLOW_EXPERIMENT_ID": "7"})) is None
    assert experiment_name(plan()) == "Default"
