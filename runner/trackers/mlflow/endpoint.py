"""Where the MLflow tracking server is and how the runner signs in to it, read from the plan.

The credentials are ``Secret``s from the plan: ``tracking_uri`` reads a URI that may hold a
password (never print it: ``display`` is the printable form), and ``endpoint`` hands the
token or password to ``httpapi``, whose ``authorization`` is the one unwrap into a header.
"""

from __future__ import annotations

import os

from runner.secrets import Secret
from runner.trackers import httpapi
from runner.trackers.base import TrackedPlan
from runner.trackers.mlflow.settings import databricks_profile, is_databricks_uri, uri_profile


def tracking_uri(plan: TrackedPlan) -> str:
    """The URI as the job gets it; one with a password travels as a secret (never print it: ``display``)."""
    secret = plan.job.secret_env().get("MLFLOW_TRACKING_URI")
    return (secret.reveal() if secret is not None else plan.job.public_env().get("MLFLOW_TRACKING_URI") or "").strip()


def is_http(uri: str) -> bool:
    return uri.lower().startswith(("http://", "https://"))


def _with_scheme(host: str) -> str:
    """A Databricks host as its SDK takes it: ``https://`` when no scheme is given."""
    return host if not host or "://" in host else "https://" + host


def _databricks_host(plan: TrackedPlan) -> str:
    return (plan.job.public_env().get("DATABRICKS_HOST") or "").strip().rstrip("/")


def endpoint(plan: TrackedPlan) -> httpapi.Endpoint | None:
    """The REST endpoint of an HTTP tracking URI or a token-signed Databricks one; None when REST cannot reach it."""
    public, secret = plan.job.public_env(), plan.job.secret_env()
    uri = tracking_uri(plan)
    insecure = httpapi.truthy(public.get("MLFLOW_TRACKING_INSECURE_TLS"))
    cafile = public.get("MLFLOW_TRACKING_SERVER_CERT_PATH")
    tls = {"insecure_tls": insecure, "cafile": cafile if cafile and os.path.exists(cafile) else None}
    if uri == "databricks":  # a profile URI's host and token live in ~/.databrickscfg: the client reads them
        host = _with_scheme(_databricks_host(plan))
        token = secret.get("DATABRICKS_TOKEN")
        return httpapi.Endpoint("mlflow", host, host, "bearer", secret=token, **tls) if host and token else None
    if not is_http(uri):
        return None
    base, user, password = httpapi.split_userinfo(uri)
    if secret.get("MLFLOW_TRACKING_TOKEN"):
        return httpapi.Endpoint("mlflow", base, base, "bearer", secret=secret["MLFLOW_TRACKING_TOKEN"], **tls)
    if public.get("MLFLOW_TRACKING_USERNAME") and secret.get("MLFLOW_TRACKING_PASSWORD"):
        return httpapi.Endpoint("mlflow", base, base, "basic", public["MLFLOW_TRACKING_USERNAME"], secret["MLFLOW_TRACKING_PASSWORD"], **tls)
    if user and password:
        return httpapi.Endpoint("mlflow", base, base, "basic", user, Secret(password), **tls)
    return httpapi.Endpoint("mlflow", base, base, "none", **tls)


def display(plan: TrackedPlan) -> str:
    """Where the tracking server is, safe to print: the URI without a password, or the Databricks host."""
    uri = tracking_uri(plan)
    if not is_databricks_uri(uri):
        return httpapi.split_userinfo(uri)[0] if is_http(uri) else uri
    host = _databricks_host(plan)
    profile = uri_profile(uri)
    if profile:
        host = (databricks_profile(profile) or ("", frozenset()))[0] or host
    return _with_scheme(host) or uri


def experiment_name(plan: TrackedPlan) -> str | None:
    """The experiment the run goes into, by name; None when the plan names it by id."""
    public = plan.job.public_env()
    return public.get("MLFLOW_EXPERIMENT_NAME") or (None if public.get("MLFLOW_EXPERIMENT_ID") else "Default")
