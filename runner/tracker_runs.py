"""Talking to trackers: the online check and the run-identity handshake.

Both speak the trackers' HTTP APIs with ``urllib`` (the MLflow REST API, the
W&B GraphQL viewer query), so ``check --online`` and the handshake need no
optional extra and start fast. Credentials are ``Secret``s from the plan; the
one place in this module that unwraps one is ``_request`` (grep ``reveal``),
where the ``Authorization`` header is built.
"""

from __future__ import annotations

import getpass
import json
import os
import secrets as _random
import ssl
import string
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from runner import __version__
from runner.errors import EngineUnavailable
from runner.plan import LaunchPlan, Planned
from runner.secrets import Secret
from runner.tracker_config import OFFLINE_WANDB_MODES, is_databricks_uri
from runner.ui import Output

BEGIN_TIMEOUT = 15.0  # seconds per request while creating / closing a run
LOG_ARTIFACT = "primus-runner/job-output.log"
KILLED_CODES = {130, 143}  # SIGINT / SIGTERM: the run was stopped, not broken
TAG_LIMIT = 5000  # MLflow's limit on a tag value
WANDB_DEFAULT_BASE = "https://api.wandb.ai"


@dataclass
class Handshake:
    """What a launch gets from the trackers before it starts, and reports back after."""

    env: dict[str, str] = field(default_factory=dict)  # e.g. MLFLOW_RUN_ID, WANDB_RUN_ID
    links: dict[str, str] = field(default_factory=dict)  # tracker -> run URL / path, for reports
    _finish: Callable[[int, bytes], None] | None = None

    def finish(self, exit_code: int, masked_output: bytes = b"") -> None:
        if self._finish is not None:
            self._finish(exit_code, masked_output)


# ---------------------------------------------------------------- HTTP


@dataclass(frozen=True)
class _Endpoint:
    """Where a tracker answers and how to authenticate; ``display`` is safe to print."""

    tracker: str
    base: str  # scheme://host[:port][/prefix], no credentials
    display: str
    scheme: str = "basic"  # basic | bearer | none
    user: str = ""
    secret: Secret | None = None
    insecure_tls: bool = False
    cafile: str | None = None


class _HTTPFailure(Exception):
    """The tracker answered with an HTTP error (``status``) or not at all (``status`` 0)."""

    def __init__(self, status: int, detail: str, code: str = ""):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code  # MLflow's error_code, e.g. RESOURCE_DOES_NOT_EXIST


def _request(ep: _Endpoint, method: str, path: str, *, body=None, raw: bytes | None = None, timeout: float = BEGIN_TIMEOUT):
    """One HTTP call; returns the decoded JSON answer (or ``{}``). THE unwrap of credentials."""
    url = ep.base.rstrip("/") + path
    headers = {"User-Agent": f"primus-runner/{__version__}", "Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    elif raw is not None:
        data = raw
        headers["Content-Type"] = "text/plain; charset=utf-8"
    if ep.secret is not None and ep.scheme == "bearer":
        headers["Authorization"] = "Bearer " + ep.secret.reveal()
    elif ep.secret is not None and ep.scheme == "basic":
        import base64

        pair = f"{ep.user}:{ep.secret.reveal()}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    context = None
    if url.startswith("https:"):
        context = ssl.create_default_context(cafile=ep.cafile) if ep.cafile else ssl.create_default_context()
        if ep.insecure_tls:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            payload = response.read()
    except urllib.error.HTTPError as exc:
        text = exc.read(2000).decode("utf-8", "replace") if exc.fp else ""
        code, message = "", text.strip()
        try:
            answer = json.loads(text)
            code, message = answer.get("error_code", ""), answer.get("message", message)
        except (ValueError, AttributeError):
            pass
        raise _HTTPFailure(exc.code, f"HTTP {exc.code}" + (f": {message[:300]}" if message else ""), code) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:  # refused, DNS, timeout, TLS
        reason = getattr(exc, "reason", exc)
        raise _HTTPFailure(0, f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__) from None
    if not payload:
        return {}
    try:
        return json.loads(payload)
    except ValueError:
        raise _HTTPFailure(200, "the answer is not JSON: is this the right URL?") from None


def _truthy(value: str | None) -> bool:
    return str(value or "").strip().lower() in ("1", "true", "yes", "on")


def _split_userinfo(uri: str) -> tuple[str, str, str | None]:
    """(uri without user:password@, user, password) so a URI never prints a password."""
    parts = urllib.parse.urlsplit(uri)
    if "@" not in parts.netloc:
        return uri.rstrip("/"), "", None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)).rstrip("/")
    return clean, urllib.parse.unquote(user), urllib.parse.unquote(password) if password else None


def _mlflow_endpoint(plan: LaunchPlan) -> _Endpoint | None:
    """The MLflow REST endpoint of the plan's tracking URI; None for non-HTTP stores (file:, sqlite:)."""
    public, secret = plan.public_env(), plan.secret_env()
    uri = (public.get("MLFLOW_TRACKING_URI") or "").strip()
    insecure = _truthy(public.get("MLFLOW_TRACKING_INSECURE_TLS"))
    cafile = public.get("MLFLOW_TRACKING_SERVER_CERT_PATH")
    cafile = cafile if cafile and os.path.exists(cafile) else None
    if is_databricks_uri(uri):
        host = (public.get("DATABRICKS_HOST") or "").strip().rstrip("/")
        if host and "://" not in host:
            host = "https://" + host
        token = secret.get("DATABRICKS_TOKEN")
        return _Endpoint("mlflow", host, host or "Databricks (DATABRICKS_HOST unset)", "bearer" if token else "none", secret=token,
                         insecure_tls=insecure, cafile=cafile)
    if not uri.lower().startswith(("http://", "https://")):
        return None
    base, user, password = _split_userinfo(uri)
    if secret.get("MLFLOW_TRACKING_TOKEN"):
        return _Endpoint("mlflow", base, base, "bearer", secret=secret["MLFLOW_TRACKING_TOKEN"], insecure_tls=insecure, cafile=cafile)
    if public.get("MLFLOW_TRACKING_USERNAME") and secret.get("MLFLOW_TRACKING_PASSWORD"):
        return _Endpoint("mlflow", base, base, "basic", public["MLFLOW_TRACKING_USERNAME"], secret["MLFLOW_TRACKING_PASSWORD"],
                         insecure_tls=insecure, cafile=cafile)
    if user and password:
        return _Endpoint("mlflow", base, base, "basic", user, Secret(password), insecure_tls=insecure, cafile=cafile)
    return _Endpoint("mlflow", base, base, "none", insecure_tls=insecure, cafile=cafile)


def _wandb_endpoint(plan: LaunchPlan) -> _Endpoint:
    public = plan.public_env()
    base = (public.get("WANDB_BASE_URL") or WANDB_DEFAULT_BASE).strip().rstrip("/")
    base, _, _ = _split_userinfo(base)
    key = plan.secret_env().get("WANDB_API_KEY")
    return _Endpoint("wandb", base, base, "basic" if key else "none", "api", key)


def _wandb_mode(plan: LaunchPlan) -> str:
    return (plan.public_env().get("WANDB_MODE") or plan.trackers.wandb_mode or "online").strip().lower()


# ---------------------------------------------------------------- check --online


def _status(tracker: str, status: str, detail: str) -> dict:
    return {"tracker": tracker, "status": status, "detail": detail}


def _failure_status(exc: _HTTPFailure) -> str:
    return "unauthorised" if exc.status in (401, 403) else "unreachable"


def _check_mlflow(plan: LaunchPlan, timeout: float) -> dict:
    ep = _mlflow_endpoint(plan)
    uri = plan.public_env().get("MLFLOW_TRACKING_URI", "")
    if ep is None:
        scheme = uri.split(":", 1)[0] if ":" in uri else "a local path"
        return _status("mlflow", "skipped", f"MLFLOW_TRACKING_URI uses {scheme}: a store inside the job, nothing to contact")
    if not ep.base:
        return _status("mlflow", "unreachable", "DATABRICKS_HOST is not set")
    if ep.secret is None and is_databricks_uri(uri):
        return _status("mlflow", "skipped", "Databricks OAuth (client id/secret) is not checked; only DATABRICKS_TOKEN is")
    try:
        answer = _request(ep, "GET", "/api/2.0/mlflow/experiments/search?max_results=1", timeout=timeout)
    except _HTTPFailure as exc:
        if exc.status == 404:
            return _status("mlflow", "unreachable", f"{ep.display} answered HTTP 404: not an MLflow tracking server (check MLFLOW_TRACKING_URI)")
        return _status("mlflow", _failure_status(exc), f"{ep.display}: {exc.detail}")
    count = len(answer.get("experiments", []) or [])
    return _status("mlflow", "reachable", f"{ep.display} listed {count} experiment{'s' if count != 1 else ''}")


def _check_wandb(plan: LaunchPlan, timeout: float) -> dict:
    mode = _wandb_mode(plan)
    if mode in OFFLINE_WANDB_MODES:
        return _status("wandb", "skipped", f"WANDB_MODE={mode}: the job does not contact W&B")
    ep = _wandb_endpoint(plan)
    if ep.secret is None:
        return _status("wandb", "unauthorised", "WANDB_API_KEY is not set")
    query = {"query": "query Viewer { viewer { id username entity } }"}
    try:
        answer = _request(ep, "POST", "/graphql", body=query, timeout=timeout)
    except _HTTPFailure as exc:
        return _status("wandb", _failure_status(exc), f"{ep.display}: {exc.detail}")
    viewer = (answer.get("data") or {}).get("viewer") if isinstance(answer, dict) else None
    if not viewer:
        return _status("wandb", "unauthorised", f"{ep.display} did not accept WANDB_API_KEY")
    who = viewer.get("entity") or viewer.get("username")
    return _status("wandb", "reachable", f"{ep.display} accepted WANDB_API_KEY" + (f" (entity {who})" if who else ""))


def online_check(plan: LaunchPlan, planned: Planned, timeout: float = 10.0) -> list[dict]:
    """[{"tracker", "status": reachable|unauthorised|unreachable|not-installed|skipped, "detail"}].

    One entry per enabled tracker, checked in parallel, each within ``timeout``.
    """
    checks: list[tuple[str, Callable[[], dict]]] = []
    if plan.trackers.is_on("tensorboard"):
        checks.append(("tensorboard", lambda: _status("tensorboard", "skipped", "writes local event files; nothing to contact")))
    if plan.trackers.is_on("mlflow"):
        checks.append(("mlflow", lambda: _check_mlflow(plan, timeout)))
    if plan.trackers.is_on("wandb"):
        checks.append(("wandb", lambda: _check_wandb(plan, timeout)))
    if not checks:
        return []
    with ThreadPoolExecutor(max_workers=len(checks)) as pool:
        futures = [pool.submit(fn) for _, fn in checks]
        return [f.result() for f in futures]


# ---------------------------------------------------------------- the handshake


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=5, cwd=os.getcwd(), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def run_tags(plan: LaunchPlan) -> dict[str, str]:
    """The tags the runner puts on a run it creates: facts and NAMES, never a value."""
    tags = {
        "primus-runner.version": __version__,
        "primus-runner.image": plan.image,
        "primus-runner.job": plan.name,
        "primus-runner.framework": plan.trackers.framework,
        "primus-runner.config_hash": plan.trackers.config_hash,
        "primus-runner.forwarded_env": ",".join(sorted(d.name for d in plan.forwarded))[:TAG_LIMIT],
        "mlflow.source.type": "JOB",
        "mlflow.source.name": "primus-runner",
    }
    try:
        tags["mlflow.user"] = getpass.getuser()
    except Exception:  # no passwd entry in some containers
        pass
    commit = _git("rev-parse", "HEAD")
    if commit:
        tags["primus-runner.git_commit"] = commit
        tags["mlflow.source.git.commit"] = commit
        dirty = _git("status", "--porcelain", "--untracked-files=no")
        if dirty is not None:
            tags["primus-runner.git_dirty"] = "true" if dirty else "false"
    return tags


def _unreachable(ep: _Endpoint, exc: _HTTPFailure) -> EngineUnavailable:
    if exc.status in (401, 403):
        return EngineUnavailable(
            f"MLflow server at {ep.display} refused the credentials ({exc.detail}); nothing was launched",
            hint="check MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME/PASSWORD (DATABRICKS_TOKEN for Databricks)",
        )
    if exc.status == 0:
        return EngineUnavailable(
            f"MLflow server at {ep.display} is unreachable ({exc.detail}); nothing was launched",
            hint="start the server or fix MLFLOW_TRACKING_URI; `primus-runner check --online` tests it",
        )
    return EngineUnavailable(f"MLflow server at {ep.display} refused to create the run ({exc.detail}); nothing was launched")


def _experiment_id(ep: _Endpoint, name: str) -> str:
    query = urllib.parse.urlencode({"experiment_name": name})
    for _ in range(2):  # create can race with another launch creating the same experiment
        try:
            experiment = _request(ep, "GET", f"/api/2.0/mlflow/experiments/get-by-name?{query}")["experiment"]
            if experiment.get("lifecycle_stage") == "deleted":
                raise EngineUnavailable(
                    f"MLflow experiment '{name}' is deleted on {ep.display}; nothing was launched",
                    hint="restore it (mlflow experiments restore) or set another trackers.mlflow_experiment_name",
                )
            return str(experiment["experiment_id"])
        except _HTTPFailure as exc:
            if exc.code != "RESOURCE_DOES_NOT_EXIST" and exc.status != 404:
                raise
        try:
            return str(_request(ep, "POST", "/api/2.0/mlflow/experiments/create", body={"name": name})["experiment_id"])
        except _HTTPFailure as exc:
            if exc.code != "RESOURCE_ALREADY_EXISTS":
                raise
    raise _HTTPFailure(409, f"experiment '{name}' could not be created or found")


def _run_url(ep: _Endpoint, plan: LaunchPlan, experiment_id: str, run_id: str) -> str:
    if is_databricks_uri(plan.public_env().get("MLFLOW_TRACKING_URI", "")):
        return f"{ep.display}/ml/experiments/{experiment_id}/runs/{run_id}"
    return f"{ep.display}/#/experiments/{experiment_id}/runs/{run_id}"


def final_status(exit_code: int) -> str:
    if exit_code == 0:
        return "FINISHED"
    return "KILLED" if exit_code in KILLED_CODES else "FAILED"


def _mlflow_begin(plan: LaunchPlan, out: Output, hs: Handshake) -> Callable[[int, bytes], None] | None:
    ep = _mlflow_endpoint(plan)
    if ep is None:
        out.notice("MLflow: the tracking URI is not an HTTP server; the job creates its own run (no run handshake)")
        return None
    if not ep.base or ep.secret is None and is_databricks_uri(plan.public_env().get("MLFLOW_TRACKING_URI", "")):
        out.notice("MLflow: Databricks without DATABRICKS_HOST/DATABRICKS_TOKEN; the job creates its own run (no run handshake)")
        return None
    public = plan.public_env()
    experiment_name = public.get("MLFLOW_EXPERIMENT_NAME")
    run_name = plan.trackers.run_name or plan.name
    tags = {k: out.masker.mask(v) for k, v in run_tags(plan).items()}  # names only; masked all the same
    try:
        if experiment_name:
            experiment_id = _experiment_id(ep, experiment_name)
        elif public.get("MLFLOW_EXPERIMENT_ID"):
            experiment_id = public["MLFLOW_EXPERIMENT_ID"]
        else:
            experiment_name = "Default"
            experiment_id = _experiment_id(ep, experiment_name)
        body = {
            "experiment_id": experiment_id,
            "run_name": run_name,
            "user_id": tags.get("mlflow.user", ""),
            "start_time": int(time.time() * 1000),
            "tags": [{"key": k, "value": v} for k, v in tags.items()],
        }
        run = _request(ep, "POST", "/api/2.0/mlflow/runs/create", body=body)["run"]
    except _HTTPFailure as exc:
        raise _unreachable(ep, exc) from None
    run_id = run["info"]["run_id"]
    artifact_uri = run["info"].get("artifact_uri", "")
    hs.env["MLFLOW_RUN_ID"] = run_id
    hs.env["MLFLOW_EXPERIMENT_ID"] = experiment_id
    if experiment_name:
        hs.env["MLFLOW_EXPERIMENT_NAME"] = experiment_name
    url = _run_url(ep, plan, experiment_id, run_id)
    hs.links["mlflow"] = url
    out.info(f"MLflow run '{run_name}': {url}")
    upload = bool(plan.trackers.settings.get("mlflow_upload_logs"))

    def finish(exit_code: int, masked_output: bytes) -> None:
        """Close the run from the exit code, upload the (masked) output; never raises: the job already ran."""
        status = final_status(exit_code)
        try:
            current = _request(ep, "GET", f"/api/2.0/mlflow/runs/get?run_id={run_id}")["run"]["info"]["status"]
            # The job's client may have closed the run FINISHED at exit (mlflow's atexit
            # does, even for a failing process): the exit code is the truth for failures.
            if current in ("RUNNING", "SCHEDULED") or (status != "FINISHED" and current == "FINISHED"):
                _request(ep, "POST", "/api/2.0/mlflow/runs/update", body={"run_id": run_id, "status": status, "end_time": int(time.time() * 1000)})
        except _HTTPFailure as exc:
            out.warn(f"MLflow: could not close run {run_id} as {status}: {exc.detail}")
        if upload:
            _upload_log(ep, artifact_uri, out.masker.mask_bytes(masked_output), out)

    return finish


def _upload_log(ep: _Endpoint, artifact_uri: str, data: bytes, out: Output) -> None:
    """PUT the output through the server's artifact proxy (``mlflow server --serve-artifacts``)."""
    parts = urllib.parse.urlsplit(artifact_uri)
    if parts.scheme != "mlflow-artifacts":
        out.warn(
            f"MLflow: the job output was not uploaded: the run's artifact store ({parts.scheme or artifact_uri}:) is not "
            "served by the tracking server (start it with --serve-artifacts)"
        )
        return
    path = urllib.parse.quote(f"{parts.path.strip('/')}/{LOG_ARTIFACT}")
    try:
        _request(ep, "PUT", f"/api/2.0/mlflow-artifacts/artifacts/{path}", raw=data, timeout=max(BEGIN_TIMEOUT, 60.0))
    except _HTTPFailure as exc:
        out.warn(f"MLflow: the job output was not uploaded: {exc.detail}")


_ID_ALPHABET = string.ascii_lowercase + string.digits


def new_wandb_run_id() -> str:
    """8 characters of [a-z0-9], the shape wandb's own ids have."""
    return "".join(_random.choice(_ID_ALPHABET) for _ in range(8))


def _wandb_begin(plan: LaunchPlan, out: Output, hs: Handshake) -> None:
    public = plan.public_env()
    run_id = public.get("WANDB_RUN_ID") or new_wandb_run_id()
    hs.env["WANDB_RUN_ID"] = run_id
    project = public.get("WANDB_PROJECT") or "uncategorized"
    entity = public.get("WANDB_ENTITY") or public.get("WANDB_TEAM")
    mode = _wandb_mode(plan)
    if mode in ("offline", "dryrun"):
        where = public.get("WANDB_DIR") or "<job working directory>"
        path = f"{where.rstrip('/')}/wandb/offline-run-*-{run_id}"
        out.info(f"W&B run {run_id} (offline, project {project}): {path} (upload later with `wandb sync`)")
    elif mode == "disabled":
        path = f"disabled/{project}/runs/{run_id}"
    else:
        path = f"{entity or '<default entity>'}/{project}/runs/{run_id}"
        base = (public.get("WANDB_BASE_URL") or WANDB_DEFAULT_BASE).rstrip("/")
        shown = f"https://wandb.ai/{path}" if base == WANDB_DEFAULT_BASE and entity else path
        out.info(f"W&B run: {shown}")
    hs.links["wandb"] = path


def begin(plan: LaunchPlan, out: Output) -> Handshake:
    """Create tracker runs before launch; raise ``EngineUnavailable`` (exit 1) before anything starts.

    The backend adds ``env`` to the plan (``plan.with_env``) and calls
    ``finish(exit_code, masked_output)`` once the job has ended.
    """
    hs = Handshake()
    finishers: list[Callable[[int, bytes], None]] = []
    if plan.trackers.is_on("mlflow"):
        fn = _mlflow_begin(plan, out, hs)
        if fn:
            finishers.append(fn)
    if plan.trackers.is_on("wandb"):
        _wandb_begin(plan, out, hs)
    if finishers:

        def finish(exit_code: int, masked_output: bytes) -> None:
            for fn in finishers:
                fn(exit_code, masked_output)

        hs._finish = finish
    return hs
