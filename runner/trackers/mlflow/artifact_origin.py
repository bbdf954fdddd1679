"""Whether an artifact location an MLflow server hands out may receive the tracking server's credentials.

An experiment's ``artifact_location`` and a run's ``artifact_uri`` are data on
the server: any user of a shared server can set them. The MLflow client sends
``MLFLOW_TRACKING_TOKEN`` (or the username and password) to whatever http(s)
host such a location names, and an ``mlflow-artifacts://host:port/…`` location
is resolved against that host. Such a location is used only when it is on the
tracking server's own origin; other stores (s3:, gs:, dbfs:, a path) carry
their own credentials, not the tracking server's.
"""

from __future__ import annotations

import urllib.parse

from runner.clients.origins import origin, same_origin, show_origin


def artifact_refusal(tracking: str, location: str) -> str | None:
    """Why ``location`` must not be written with the credentials of the server at ``tracking`` (None: it may)."""
    parts = urllib.parse.urlsplit(location)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        if same_origin(location, tracking):
            return None
        return (f"the artifact location names {show_origin(location)}, not the tracking server {show_origin(tracking)}; "
                "the runner does not send the tracking credentials there")
    if scheme == "mlflow-artifacts" and parts.netloc:
        tracking_scheme, tracking_host, tracking_port = origin(tracking)
        target = f"{tracking_scheme}://{parts.netloc}"
        if origin(target) == (tracking_scheme, tracking_host, tracking_port):
            return None
        return (f"the artifact location names {show_origin(target)} ({scheme}://{parts.netloc}), not the tracking server "
                f"{show_origin(tracking)}; the runner does not send the tracking credentials there")
    return None
