"""What MLflow reads: its ``trackers:`` keys, its switch, its variables and the artifact
stores' (``mlflow.SETTINGS``), and the Databricks sign-in it needs. Nothing here talks to
a tracker; the one file it reads is ``~/.databrickscfg``, for the names of a profile's
keys (never a value but the host)."""

from __future__ import annotations

import os
from typing import Callable

from runner.errors import Problem
from runner.trackers.base import Analysis, Findings, TrackerSettings

MLFLOW_NAMES = (
    "MLFLOW_TRACKING_URI",
    "MLFLOW_REGISTRY_URI",
    "MLFLOW_TRACKING_USERNAME",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
    "MLFLOW_TRACKING_INSECURE_TLS",
    "MLFLOW_TRACKING_SERVER_CERT_PATH",
    "MLFLOW_EXPERIMENT_NAME",
    "MLFLOW_EXPERIMENT_ID",
    "DATABRICKS_HOST",
    "DATABRICKS_TOKEN",
    "DATABRICKS_CLIENT_ID",
    "DATABRICKS_CLIENT_SECRET",
    "DATABRICKS_CONFIG_PROFILE",
)
# What MLflow's artifact stores read (the job's client writes artifacts with
# them, and so does the runner when it uploads the log). Forwarded when set and
# MLflow is on. The credentials among them are secrets: STORE_SECRETS must each
# match the secret policy (passthrough.secrets), or they are not forwarded.
STORE_NAMES = (
    "MLFLOW_S3_ENDPOINT_URL",
    "MLFLOW_S3_IGNORE_TLS",
    "MLFLOW_S3_UPLOAD_EXTRA_ARGS",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_CA_BUNDLE",
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_SECRET",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "MLFLOW_GCS_UPLOAD_CHUNK_SIZE",
    "MLFLOW_ARTIFACT_UPLOAD_DOWNLOAD_TIMEOUT",
)
STORE_SECRETS = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_STORAGE_CONNECTION_STRING",  # holds AccountKey=...
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_CLIENT_SECRET",
)
# Everything the runner's own MLflow client sees (runner.trackers.mlflow.client.client_env).
CLIENT_NAMES = MLFLOW_NAMES + STORE_NAMES

_BOOL = {"type": "boolean"}
_TEXT = {"type": ["string", "null"]}


def is_databricks_uri(uri: str) -> bool:
    """``databricks`` or ``databricks://profile[:prefix]`` (not ``databricks-uc``, a registry URI)."""
    return uri == "databricks" or uri.startswith("databricks://")


def uri_profile(uri: str) -> str:
    """The ``~/.databrickscfg`` profile a ``databricks://profile[:prefix]`` URI names ("" for none)."""
    return uri[len("databricks://"):].split(":")[0] if uri.startswith("databricks://") else ""


def _needs(analysis: Analysis) -> None:
    """The tracking URI, the sign-in its kind needs, and the artifact store's variables."""
    uri = (analysis.lookup("MLFLOW_TRACKING_URI") or "").strip()
    required = {"MLFLOW_TRACKING_URI": "tracker mlflow"}
    if is_databricks_uri(uri):
        required.update(_databricks_signin(uri, analysis.lookup, analysis.found))
    for name in CLIENT_NAMES:
        if name not in analysis.settings_env:
            reason = required.get(name) or ("artifact store" if name in STORE_NAMES else "tracker mlflow")
            analysis.want(name, reason, required=name in required)


def _when_off(analysis: Analysis) -> None:
    settings, found = analysis.settings, analysis.found
    stray = [k for k, v in settings.items() if k.startswith("mlflow_upload_") and v]
    if stray:
        found.warnings.append(f"{', '.join('trackers.' + k for k in stray)} set but MLflow is disabled: no effect (set disable_mlflow: false)")
    if settings.get("mlflow_run_name") and analysis.framework in ("megatron", "generic"):
        found.warnings.append(
            "trackers.mlflow_run_name is set but MLflow is disabled: it is not passed to the job "
            "(the Primus launcher would switch MLflow on for it); set disable_mlflow: false to use MLflow"
        )


def _outputs(plan) -> list[tuple[str, str]]:
    """A ``file:`` store (or a bare path): the job's client writes it where the URI says."""
    uri = plan.job.public_env().get("MLFLOW_TRACKING_URI", "")
    if not (uri.startswith("file:") or uri.startswith("/")):
        return []
    path = uri[len("file:"):] if uri.startswith("file:") else uri
    return [("MLFLOW_TRACKING_URI", "/" + path.lstrip("/") if path.startswith("//") else path)]


def _after(host, plan, run_id: str | None) -> str:
    """The file store when it holds something; else that the job wrote nothing there."""
    from runner.trackers.job_paths import holds

    if holds(host, "*"):
        return f"MLflow file store: {host} (mlflow ui --backend-store-uri file:{host})"
    return "MLflow: the job wrote nothing to its file store"


SETTINGS = TrackerSettings(
    name="mlflow",
    label="MLflow",
    keys={
        "disable_mlflow": _BOOL,
        **{f"mlflow_upload_{what}": _BOOL for what in ("traces", "logs", "performance_metrics", "tracelens_report")},
        "mlflow_run_name": _TEXT,
        "mlflow_experiment_name": _TEXT,
    },
    switch={"megatron": "disable_mlflow"},  # TorchTitan and MaxText have no MLflow integration
    setting_env={"megatron": {"mlflow_experiment_name": "MLFLOW_EXPERIMENT_NAME"}},
    names=CLIENT_NAMES,
    secrets=STORE_SECRETS,  # its own credentials are named in the built-in secret policy
    secret_kind="an artifact-store credential",
    # where its credentials go, and how (TLS verification, the server's CA): never from an untrusted file
    endpoints=("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "MLFLOW_S3_ENDPOINT_URL", "DATABRICKS_HOST",
               "MLFLOW_TRACKING_INSECURE_TLS", "MLFLOW_TRACKING_SERVER_CERT_PATH", "MLFLOW_TRACKING_CLIENT_CERT_PATH",
               "MLFLOW_S3_IGNORE_TLS"),
    run_name_key="mlflow_run_name",
    needs=_needs,
    when_off=_when_off,
    order=30,
    run_id="MLFLOW_RUN_ID",
    outputs=_outputs,
    after_line=_after,
)


# ---------------------------------------------------------------- Databricks sign-in

_DATABRICKS = "MLFLOW_TRACKING_URI is a Databricks URI"


def databricks_config_file(lookup: Callable[[str], str | None] = os.environ.get) -> str:
    return lookup("DATABRICKS_CONFIG_FILE") or os.path.expanduser("~/.databrickscfg")


def databricks_profile(profile: str, config_file: str | None = None) -> tuple[str, frozenset[str]] | None:
    """(host, names of the keys set) of a ``~/.databrickscfg`` profile; None when the file or profile is missing.

    The host is the only value returned: the file also holds tokens and client secrets.
    """
    import configparser  # only a Databricks sign-in by profile reads the file

    parser = configparser.ConfigParser(interpolation=None)
    try:
        if not parser.read(config_file or databricks_config_file()):
            return None
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    if profile.upper() == "DEFAULT":
        section = dict(parser.defaults())
    elif parser.has_section(profile):
        section = dict(parser.items(profile))
    else:
        return None
    return section.get("host", "").strip(), frozenset(k for k, v in section.items() if str(v).strip())


def _databricks_signin(uri: str, lookup: Callable[[str], str | None], found: Findings) -> dict[str, str]:
    """Required names (with why) for the sign-in the user chose; a profile's gaps become problems."""
    profile = uri_profile(uri) if uri.startswith("databricks://") else lookup("DATABRICKS_CONFIG_PROFILE")
    if profile:
        _check_profile(uri, profile, databricks_config_file(lookup), found)
        return {}
    required = {"DATABRICKS_HOST": _DATABRICKS}
    if lookup("DATABRICKS_TOKEN"):
        return required
    if lookup("DATABRICKS_CLIENT_ID") or lookup("DATABRICKS_CLIENT_SECRET"):
        oauth = "Databricks OAuth machine-to-machine sign-in needs both DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET"
        return {**required, "DATABRICKS_CLIENT_ID": oauth, "DATABRICKS_CLIENT_SECRET": oauth}
    required["DATABRICKS_TOKEN"] = f"{_DATABRICKS}; or DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET for OAuth"
    return required


def _check_profile(uri: str, profile: str, path: str, found: Findings) -> None:
    section = databricks_profile(profile, path)
    fix = (
        f"create it with `databricks configure --profile {profile}` (token) or `databricks auth login --profile {profile}`, "
        "or use MLFLOW_TRACKING_URI=databricks with DATABRICKS_HOST and DATABRICKS_TOKEN (or DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET)"
    )
    if section is None:
        what = "has no such profile" if os.path.exists(path) else "does not exist"
        found.problems.append(Problem(f"MLFLOW_TRACKING_URI={uri} signs in with profile [{profile}] of {path}, which {what}", hint=fix))
        return
    host, keys = section
    missing = [] if host else ["host"]
    if "client_id" in keys or "client_secret" in keys:
        missing += [k for k in ("client_id", "client_secret") if k not in keys]
    elif not keys & {"token", "auth_type", "password", "azure_client_secret", "google_credentials", "metadata_service_url"}:
        missing.append("token (or client_id and client_secret)")
    if missing:
        found.problems.append(Problem(f"profile [{profile}] of {path} has no {', '.join(missing)} (MLFLOW_TRACKING_URI={uri})", hint=fix))
    found.warnings.append(
        f"MLFLOW_TRACKING_URI={uri}: the job's own MLflow client reads profile [{profile}] from ~/.databrickscfg inside the container; "
        "mount the file read-only there, or sign the job in with DATABRICKS_HOST and DATABRICKS_TOKEN (or DATABRICKS_CLIENT_ID/SECRET)"
    )
