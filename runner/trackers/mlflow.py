"""MLflow as a tracker: the online check and the run-identity handshake.

Three ways to speak MLflow, one flow (``_Rest``, ``FileStore`` and ``_Client``
answer the same calls). Importing the MLflow client costs seconds, more than
the job ``true`` takes, so the launch path uses it only where nothing lighter
speaks the store's protocol:

- ``_Rest``: the REST API over ``urllib``, no import cost: every HTTP(S)
  tracking server, and Databricks signed in with a token (the same API).
- ``FileStore`` (``mlflow_filestore``): a ``file:`` tracking URI, the run
  created in the directory as MLflow lays it out, so ranks and requeues share it.
- The log: through the server's proxy (REST), or written straight into a
  directory store (local or shared) or S3 (boto3 alone, imported in a thread
  while the job runs) by ``mlflow_artifacts``.
- ``_Client``: ``mlflow.MlflowClient`` (the ``mlflow`` extra), for the rest:
  Databricks OAuth and profile sign-ins (imported beside the preflight,
  ``prefetch``), and GCS, Azure and DBFS artifact stores (imported in a
  thread from the run's start, joined after the job).

Credentials are ``Secret``s from the plan. They are unwrapped where they are
used (grep ``reveal``): ``_authorization`` builds the ``Authorization`` header,
``_tracking_uri`` reads a URI that holds a password (printed only through
``_mlflow_display``), and ``_client_env`` puts the plan's tracker variables in the process environment
for the duration of one client call, which is where MlflowClient, boto3 and
the Databricks SDK read them. Neither ever sends them to another origin than
the configured one (redirects elsewhere stop the request).
"""

from __future__ import annotations

import contextlib
import getpass
import importlib.util
import logging
import os
import tempfile
import threading
import time
import urllib.parse
import uuid
from typing import Callable, Iterator

from runner import __version__
from runner.clients.git import git
from runner.errors import CredentialRefused, EngineUnavailable
from runner.secrets import Secret
from runner.trackers import httpapi
from runner.trackers.artifact_origin import artifact_refusal
from runner.trackers.base import Handshake, TrackedPlan
from runner.trackers.mlflow_settings import CLIENT_NAMES, SETTINGS, databricks_profile, is_databricks_uri  # noqa: F401 (SETTINGS: its declaration)
from runner.trackers.httpapi import BEGIN_TIMEOUT, UPLOAD_TIMEOUT
from runner.trackers import databricks_artifacts, mlflow_artifacts
from runner.trackers.mlflow_api import LOG_ARTIFACT, Experiment as _Experiment
from runner.trackers.job_paths import host_path
from runner.trackers.mlflow_filestore import FileStore, store_root
from runner.ui import Output

NAME = "mlflow"
RUN_ENV = ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME")  # what begin() hands the job


KILLED_CODES = {130, 143}  # SIGINT / SIGTERM: the run was stopped, not broken


TAG_LIMIT = 5000  # MLflow's limit on a tag value


EXTRA_HINT = "pip install 'primus-runner[mlflow]'"


def _tracking_uri(plan: TrackedPlan) -> str:
    """The URI as the job gets it; one with a password travels as a secret (never print it: ``_mlflow_display``)."""
    secret = plan.secret_env().get("MLFLOW_TRACKING_URI")
    return (secret.reveal() if secret is not None else plan.public_env().get("MLFLOW_TRACKING_URI") or "").strip()


def _is_http(uri: str) -> bool:
    return uri.lower().startswith(("http://", "https://"))


def _mlflow_endpoint(plan: TrackedPlan) -> httpapi.Endpoint | None:
    """The REST endpoint of an HTTP tracking URI or a token-signed Databricks one; None when REST cannot reach it."""
    public, secret = plan.public_env(), plan.secret_env()
    uri = _tracking_uri(plan)
    insecure = httpapi.truthy(public.get("MLFLOW_TRACKING_INSECURE_TLS"))
    cafile = public.get("MLFLOW_TRACKING_SERVER_CERT_PATH")
    tls = {"insecure_tls": insecure, "cafile": cafile if cafile and os.path.exists(cafile) else None}
    if uri == "databricks":  # a profile URI's host and token live in ~/.databrickscfg: the client reads them
        host = (public.get("DATABRICKS_HOST") or "").strip().rstrip("/")
        host = host if not host or "://" in host else "https://" + host
        token = secret.get("DATABRICKS_TOKEN")
        return httpapi.Endpoint("mlflow", host, host, "bearer", secret=token, **tls) if host and token else None
    if not _is_http(uri):
        return None
    base, user, password = httpapi.split_userinfo(uri)
    if secret.get("MLFLOW_TRACKING_TOKEN"):
        return httpapi.Endpoint("mlflow", base, base, "bearer", secret=secret["MLFLOW_TRACKING_TOKEN"], **tls)
    if public.get("MLFLOW_TRACKING_USERNAME") and secret.get("MLFLOW_TRACKING_PASSWORD"):
        return httpapi.Endpoint("mlflow", base, base, "basic", public["MLFLOW_TRACKING_USERNAME"], secret["MLFLOW_TRACKING_PASSWORD"], **tls)
    if user and password:
        return httpapi.Endpoint("mlflow", base, base, "basic", user, Secret(password), **tls)
    return httpapi.Endpoint("mlflow", base, base, "none", **tls)


def _client_available() -> bool:
    """True when the ``mlflow`` extra is installed (a path lookup: nothing is imported)."""
    try:
        return importlib.util.find_spec("mlflow") is not None
    except (ImportError, ValueError):
        return False


class _ClientLoader:
    """Imports ``mlflow`` once, in a background thread, so a launch does not wait the seconds it takes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._client_class = None
        self._error: BaseException | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, name="primus-runner-mlflow-import", daemon=True)
                self._thread.start()

    def _load(self) -> None:
        try:
            os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
            from mlflow.tracking import MlflowClient

            # Library logs go to stderr unmasked: silence them; failures come back as exceptions, printed masked.
            for name in ("mlflow", "databricks", "botocore", "boto3", "s3transfer", "urllib3", "azure", "google"):
                logging.getLogger(name).setLevel(logging.CRITICAL + 1)
            self._client_class = MlflowClient
        except BaseException as exc:  # a broken install must not kill the launch thread
            self._error = exc

    def client_class(self):
        self.start()
        assert self._thread is not None
        self._thread.join()
        if self._client_class is None:
            raise EngineUnavailable(
                f"the MLflow client could not be imported ({type(self._error).__name__}: {self._error})",
                hint=f"reinstall the extra: {EXTRA_HINT}",
            )
        return self._client_class


_LOADER = _ClientLoader()


_ENV_LOCK = threading.Lock()


@contextlib.contextmanager
def _client_env(plan: TrackedPlan, extra: dict[str, str] | None = None) -> Iterator[None]:
    """The plan's tracker and store variables in ``os.environ`` for one client call, then the old environment back.

    MlflowClient, boto3 and the Databricks SDK read credentials from the
    process environment only; the plan may hold them from the env file. They
    are there while the call runs and no subprocess is started.
    """
    values: dict[str, str] = {d.name: d.value.reveal() if isinstance(d.value, Secret) else str(d.value)
                              for d in plan.forwarded if d.name in CLIENT_NAMES}
    values.update(extra or {})
    with _ENV_LOCK:
        saved = {name: os.environ.get(name) for name in set(CLIENT_NAMES) | set(values)}
        try:
            for name in CLIENT_NAMES:
                os.environ.pop(name, None)  # only what the plan forwards: the job's view, not a stray host value
            os.environ.update(values)
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            values.clear()


_STORE_PACKAGES = {"boto3": "boto3", "botocore": "boto3", "google": "google-cloud-storage", "azure": "azure-storage-blob"}


def _client_failure(exc: BaseException) -> httpapi.HTTPFailure:
    """An exception from the client, as the REST path reports it (status 0 = no answer)."""
    if isinstance(exc, ModuleNotFoundError):
        top = (exc.name or "").split(".")[0]
        package = _STORE_PACKAGES.get(top, top)
        hint = EXTRA_HINT if package == "boto3" else f"pip install {package}"
        return httpapi.HTTPFailure(0, f"this artifact store needs {package}, which is not installed ({hint})", "NOT_INSTALLED")
    code = str(getattr(exc, "error_code", "") or "")
    status = {"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "RESOURCE_DOES_NOT_EXIST": 404, "RESOURCE_ALREADY_EXISTS": 409}.get(code, 0)
    if type(exc).__name__ == "RestException":
        try:
            status = exc.get_http_status_code() if status == 0 else status  # type: ignore[attr-defined]
        except Exception:
            pass
    text = " ".join(str(exc).split())
    if any(word in text for word in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "NoCredentialsError")):
        status = 403
    return httpapi.HTTPFailure(status, f"{type(exc).__name__}: {text}" if text else type(exc).__name__, code)


class _Rest:
    """The MLflow REST API over urllib: no extra needed; artifacts only through the server's proxy."""

    def __init__(self, ep: httpapi.Endpoint, timeout: float = BEGIN_TIMEOUT):
        self.ep, self.display, self.timeout = ep, ep.display, timeout

    def _call(self, method: str, path: str, **kwargs):
        return httpapi.request(self.ep, method, "/api/2.0/" + path, timeout=kwargs.pop("timeout", self.timeout), **kwargs)

    def search(self) -> int:
        return len(self._call("GET", "mlflow/experiments/search?max_results=1").get("experiments", []) or [])

    def experiment(self, name: str) -> _Experiment | None:
        try:
            answer = self._call("GET", "mlflow/experiments/get-by-name?" + urllib.parse.urlencode({"experiment_name": name}))
        except httpapi.HTTPFailure as exc:
            if exc.code == "RESOURCE_DOES_NOT_EXIST" or exc.status == 404:
                return None
            raise
        found = answer.get("experiment") if isinstance(answer, dict) else None
        if not isinstance(found, dict) or "experiment_id" not in found:
            return None
        return _Experiment(str(found["experiment_id"]), found.get("lifecycle_stage") == "deleted", found.get("artifact_location", ""))

    def create_experiment(self, name: str) -> str | None:
        try:
            return str(self._call("POST", "mlflow/experiments/create", body={"name": name})["experiment_id"])
        except httpapi.HTTPFailure as exc:
            if exc.code == "RESOURCE_ALREADY_EXISTS":
                return None
            raise

    def create_run(self, experiment_id: str, run_name: str, tags: dict[str, str]) -> tuple[str, str]:
        body = {"experiment_id": experiment_id, "run_name": run_name, "user_id": tags.get("mlflow.user", ""),
                "start_time": int(time.time() * 1000), "tags": [{"key": k, "value": v} for k, v in tags.items()]}
        info = self._call("POST", "mlflow/runs/create", body=body)["run"]["info"]
        return info["run_id"], info.get("artifact_uri", "")

    def run_status(self, run_id: str) -> str:
        return self._call("GET", f"mlflow/runs/get?run_id={urllib.parse.quote(run_id)}")["run"]["info"]["status"]

    def set_status(self, run_id: str, status: str) -> None:
        self._call("POST", "mlflow/runs/update", body={"run_id": run_id, "status": status, "end_time": int(time.time() * 1000)})

    def _proxied(self, uri: str) -> str:
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme != "mlflow-artifacts":
            raise httpapi.HTTPFailure(0, f"the artifact store ({parts.scheme or 'a path'}:) is not served by the tracking server, and "
                                  f"writing to it directly needs the MLflow client ({EXTRA_HINT})", "NOT_INSTALLED")
        return "mlflow-artifacts/artifacts/" + urllib.parse.quote(parts.path.strip("/"))

    def upload(self, run_id: str, artifact_uri: str, data: bytes) -> None:
        if databricks_artifacts.handles(artifact_uri):  # a Databricks-managed run: a signed URL of its cloud store
            databricks_artifacts.upload(self.ep, run_id, artifact_uri, data, max(self.timeout, UPLOAD_TIMEOUT))
            return
        self._call("PUT", f"{self._proxied(artifact_uri)}/{LOG_ARTIFACT}", raw=data, timeout=max(self.timeout, UPLOAD_TIMEOUT))

    def probe(self, location: str) -> None:
        path = f"{self._proxied(location)}/primus-runner-probe-{uuid.uuid4().hex}"
        self._call("PUT", f"{path}/probe.txt", raw=b"primus-runner write probe\n")
        self._call("DELETE", path)


class _Client:
    """``mlflow.MlflowClient``: every artifact store and Databricks sign-in the official client knows."""

    def __init__(self, plan: TrackedPlan, timeout: float = BEGIN_TIMEOUT, retries: int = 2):
        self.plan, self.uri = plan, _tracking_uri(plan)
        self.display = _mlflow_display(plan)
        # The client's own retry/back-off is the only one; bounded so a dead server fails within ~timeout*(retries+1).
        self.extra = {"MLFLOW_HTTP_REQUEST_TIMEOUT": str(max(1, int(timeout))), "MLFLOW_HTTP_REQUEST_MAX_RETRIES": str(retries),
                      "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1", "AWS_MAX_ATTEMPTS": str(retries + 1),
                      "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}  # the client prints run URLs on stdout

    def _call(self, fn):
        client_class = _LOADER.client_class()
        try:
            with _client_env(self.plan, self.extra):
                return fn(client_class(tracking_uri=self.uri))
        except Exception as exc:  # MlflowException, requests, boto3, the Databricks SDK: one shape
            raise _client_failure(exc) from None

    def search(self) -> int:
        return len(self._call(lambda c: c.search_experiments(max_results=1)))

    def experiment(self, name: str) -> _Experiment | None:
        found = self._call(lambda c: c.get_experiment_by_name(name))
        return None if found is None else _Experiment(str(found.experiment_id), found.lifecycle_stage == "deleted", found.artifact_location or "")

    def create_experiment(self, name: str) -> str | None:
        try:
            return str(self._call(lambda c: c.create_experiment(name)))
        except httpapi.HTTPFailure as exc:
            if exc.code == "RESOURCE_ALREADY_EXISTS":
                return None
            raise

    def create_run(self, experiment_id: str, run_name: str, tags: dict[str, str]) -> tuple[str, str]:
        run = self._call(lambda c: c.create_run(experiment_id, start_time=int(time.time() * 1000), tags=tags, run_name=run_name))
        return run.info.run_id, run.info.artifact_uri

    def run_status(self, run_id: str) -> str:
        return self._call(lambda c: c.get_run(run_id).info.status)

    def set_status(self, run_id: str, status: str) -> None:
        self._call(lambda c: c.set_terminated(run_id, status))

    def upload(self, run_id: str, artifact_uri: str, data: bytes) -> None:
        with tempfile.TemporaryDirectory(prefix="primus-runner-") as tmp:  # 0700: the masked output, briefly
            local = os.path.join(tmp, os.path.basename(LOG_ARTIFACT))
            with open(local, "wb") as f:
                f.write(data)
            self._call(lambda _c: self._repository(artifact_uri).log_artifact(local, artifact_path=os.path.dirname(LOG_ARTIFACT)))

    def _repository(self, location: str):
        """The store at ``location`` as checked (not the run's artifact URI fetched again, which the server could change)."""
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
        from mlflow.utils.uri import add_databricks_profile_info_to_artifact_uri

        return get_artifact_repository(add_databricks_profile_info_to_artifact_uri(location, self.uri), tracking_uri=self.uri)

    def probe(self, location: str) -> None:
        def write_and_remove(_client) -> None:
            repo = self._repository(f"{location.rstrip('/')}/primus-runner-probe-{uuid.uuid4().hex}")
            with tempfile.TemporaryDirectory(prefix="primus-runner-") as tmp:
                local = os.path.join(tmp, "probe.txt")
                with open(local, "w") as f:
                    f.write("primus-runner write probe\n")
                repo.log_artifact(local)
            repo.delete_artifacts()

        self._call(write_and_remove)


def _mlflow_display(plan: TrackedPlan) -> str:
    """Where the tracking server is, safe to print: the URI without a password, or the Databricks host."""
    uri = _tracking_uri(plan)
    if not is_databricks_uri(uri):
        return httpapi.split_userinfo(uri)[0] if _is_http(uri) else uri
    host = (plan.public_env().get("DATABRICKS_HOST") or "").strip().rstrip("/")
    profile = uri[len("databricks://"):].split(":")[0] if uri.startswith("databricks://") else ""
    if profile:
        host = (databricks_profile(profile) or ("", frozenset()))[0] or host
    if host and "://" not in host:
        host = "https://" + host
    return host or uri


def _get_or_create_experiment(api, name: str, lookup=None) -> str:
    for _ in range(2):  # create can race with another launch creating the same experiment
        found = (lookup or api.experiment)(name)
        if found is not None:
            if found.deleted:
                raise EngineUnavailable(
                    f"MLflow experiment '{name}' is deleted on {api.display}; nothing was launched",
                    hint="restore it (mlflow experiments restore) or set another trackers.mlflow_experiment_name",
                )
            return found.id
        created = api.create_experiment(name)
        if created is not None:
            return created
    raise httpapi.HTTPFailure(409, f"experiment '{name}' could not be created or found")


def _handshake_api(plan: TrackedPlan, *, timeout: float = BEGIN_TIMEOUT):
    """REST for HTTP servers and Databricks tokens, the file store for a ``file:`` URI (no import on the launch
    path), the client for the other Databricks sign-ins; None: no handshake."""
    uri = _tracking_uri(plan)
    job_root = store_root(uri)
    if job_root is not None:  # a store that is not on this host (only inside the job) gets no handshake
        root = host_path(plan.mounts, job_root)
        return FileStore(root, job_root) if root is not None and os.path.isdir(root) else None
    if not _is_http(uri) and not is_databricks_uri(uri):
        return None
    ep = _mlflow_endpoint(plan)
    if ep is None and is_databricks_uri(uri) and _client_available():
        return _Client(plan, timeout)
    if ep is None:  # Databricks OAuth or a profile, without the extra
        raise EngineUnavailable(
            f"MLflow on Databricks ({uri}) with OAuth or a ~/.databrickscfg profile needs the MLflow client, which is not installed; "
            "nothing was launched",
            hint=f"{EXTRA_HINT} (or sign in with DATABRICKS_HOST and DATABRICKS_TOKEN)",
        )
    return _Rest(ep, timeout)


class _Direct:
    """The log written into a directory or S3 store without the MLflow client (``mlflow_artifacts``)."""

    def __init__(self, plan: TrackedPlan):
        self.plan = plan

    def _call(self, fn, location: str) -> None:
        try:
            with _client_env(self.plan, {"AWS_MAX_ATTEMPTS": "3"}):
                fn(location)
        except httpapi.HTTPFailure:
            raise
        except Exception as exc:  # OSError, botocore's errors, boto3 missing: one shape
            raise _client_failure(exc) from None

    def upload(self, run_id: str, artifact_uri: str, data: bytes) -> None:
        self._call(lambda location: mlflow_artifacts.upload(location, data), artifact_uri)

    def probe(self, location: str) -> None:
        self._call(mlflow_artifacts.probe, location)


def _writer(plan: TrackedPlan, opened, location: str):
    """What writes to the artifact store at ``location``: the API that opened the run when it reaches the store
    (the server's proxy, the client), ``_Direct`` for a directory or S3, else the client (None: not installed)."""
    proxied = urllib.parse.urlsplit(location).scheme == "mlflow-artifacts" or (
        databricks_artifacts.handles(location) and is_databricks_uri(_tracking_uri(plan)))  # over REST, signed by Databricks
    if isinstance(opened, (_Client, FileStore)) or (proxied and isinstance(opened, _Rest)):
        return opened  # a file store maps the job's paths to the host's
    if mlflow_artifacts.writes_directly(location):
        return _Direct(plan)
    return _Client(plan, max(BEGIN_TIMEOUT, UPLOAD_TIMEOUT)) if _client_available() else None


def _load_writer(writer, location: str) -> None:
    """Start importing what the writer needs, so the job's run time hides it."""
    if isinstance(writer, _Direct):
        mlflow_artifacts.preload(location)
    elif isinstance(writer, _Client):
        _LOADER.start()


def _check_store(plan: TrackedPlan, api, timeout: float) -> tuple[str, str]:
    """(status, detail) of a write probe in the artifact store of the run's experiment, removed afterwards."""
    name = plan.public_env().get("MLFLOW_EXPERIMENT_NAME") or "Default"
    found = api.experiment(name) or (api.experiment("Default") if name != "Default" else None)
    if found is None:
        return "reachable", f"artifact store not probed: experiment '{name}' does not exist yet"
    refusal = artifact_refusal(api.display, found.location)
    if refusal:
        return "unreachable", f"artifact store of experiment '{name}' not probed: {refusal}"
    prober = _writer(plan, api, found.location)
    if isinstance(prober, _Client) and prober is not api:
        prober = _Client(plan, timeout, retries=0)
    elif prober is None:
        upload = bool(plan.trackers.settings.get("mlflow_upload_logs"))
        detail = f"artifact store {found.location} is not served by the tracking server; checking it needs the MLflow client ({EXTRA_HINT})"
        return ("not-installed" if upload else "reachable"), detail
    try:
        prober.probe(found.location)
    except httpapi.HTTPFailure as exc:
        return httpapi.failure_status(exc), f"artifact store {found.location}: {exc.detail}"
    return "reachable", f"artifact store {found.location} writable (probe written and removed)"


def _check_mlflow(plan: TrackedPlan, timeout: float) -> dict:
    uri = _tracking_uri(plan)
    try:
        api = _handshake_api(plan, timeout=timeout)
    except EngineUnavailable as exc:
        return httpapi.status("mlflow", "not-installed", f"{exc.message.split(';')[0]} ({exc.hint})")
    if api is None:
        scheme = uri.split(":", 1)[0] if ":" in uri else "a local path"
        return httpapi.status("mlflow", "skipped", f"MLFLOW_TRACKING_URI uses {scheme}: a store inside the job, nothing to contact")
    if isinstance(api, _Client):
        api.extra["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"  # one try within --timeout
    try:
        count = api.search()
    except httpapi.HTTPFailure as exc:
        if exc.status == 404:
            return httpapi.status("mlflow", "unreachable", f"{api.display} answered HTTP 404: not an MLflow tracking server (check MLFLOW_TRACKING_URI)")
        return httpapi.status("mlflow", httpapi.failure_status(exc), f"{api.display}: {exc.detail}")
    tracking = f"{api.display} listed {count} experiment{'s' if count != 1 else ''}"
    if is_databricks_uri(uri):
        return httpapi.status("mlflow", "reachable", f"{tracking}; Databricks manages the artifact store")
    try:
        status, detail = _check_store(plan, api, timeout)
    except httpapi.HTTPFailure as exc:
        status, detail = httpapi.failure_status(exc), f"artifact store: {exc.detail}"
    return httpapi.status("mlflow", status, f"{tracking}; {detail}")


def run_tags(plan: TrackedPlan, git_facts: dict[str, str] | None = None) -> dict[str, str]:
    """The tags the runner puts on a run it creates: facts and NAMES, never a value (``git_facts``: ``_git_tags()``)."""
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
    tags.update(_git_tags() if git_facts is None else git_facts)
    return tags


def _git_tags() -> dict[str, str]:
    """The commit of the working directory and whether it is dirty: two git processes."""
    tags: dict[str, str] = {}
    commit = git(os.getcwd(), "rev-parse", "HEAD")
    if commit:
        tags["primus-runner.git_commit"] = commit
        tags["mlflow.source.git.commit"] = commit
        dirty = git(os.getcwd(), "status", "--porcelain", "--untracked-files=no")
        if dirty is not None:
            tags["primus-runner.git_dirty"] = "true" if dirty else "false"
    return tags


class _Early:
    """The handshake's steps that change nothing, started beside the preflight (``prefetch``): the git facts
    for the run's tags, and the experiment looked up over REST or in the file store. ``begin`` takes them
    when they were made for the same store and directory, and does them itself otherwise."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._thread: threading.Thread | None = None
        self._git: dict[str, str] | None = None
        self._found: tuple | None = None  # (experiment name, Experiment | None | HTTPFailure)

    @staticmethod
    def _key_of(plan: TrackedPlan) -> tuple:
        return _tracking_uri(plan), os.getcwd(), _experiment_name(plan), tuple(str(m) for m in getattr(plan, "mounts", ()))

    def start(self, plan: TrackedPlan) -> None:
        if self._thread is not None and self._key == self._key_of(plan):
            return
        self._key, self._git, self._found = self._key_of(plan), None, None
        api, name = _handshake_api(plan), _experiment_name(plan)

        def work() -> None:
            self._git = _git_tags()
            if name and isinstance(api, (_Rest, FileStore)):  # the client reads os.environ: not beside the preflight
                try:
                    self._found = (name, api.experiment(name))
                except httpapi.HTTPFailure as exc:
                    self._found = (name, exc)

        self._thread = threading.Thread(target=work, name="primus-runner-mlflow-early", daemon=True)
        self._thread.start()

    def _ready(self, plan: TrackedPlan) -> bool:
        if self._thread is None or self._key != self._key_of(plan):
            return False
        self._thread.join()
        return True

    def tags(self, plan: TrackedPlan) -> dict[str, str]:
        return run_tags(plan, self._git if self._ready(plan) else None)

    def experiment(self, plan: TrackedPlan, api, name: str):
        """The early lookup, once (a second look, after a lost create race, asks again); else a lookup now."""
        if self._ready(plan) and self._found is not None and self._found[0] == name:
            found, self._found = self._found[1], None
            if isinstance(found, httpapi.HTTPFailure):
                raise found
            return found
        return api.experiment(name)


_EARLY = _Early()


def _unreachable(display: str, exc: httpapi.HTTPFailure) -> EngineUnavailable | CredentialRefused:
    if exc.redirect:
        return EngineUnavailable(
            f"MLflow server at {display} redirected to another origin ({exc.redirect}); the runner does not send "
            "credentials there, nothing was launched",
            hint="set MLFLOW_TRACKING_URI to the address that answers, if you trust it",
        )
    if exc.status in (401, 403):
        return CredentialRefused(
            f"MLflow server at {display} refused the credentials ({exc.detail}); nothing was launched",
            hint="check MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME/PASSWORD (for Databricks: DATABRICKS_TOKEN, "
            "DATABRICKS_CLIENT_ID/SECRET, or the ~/.databrickscfg profile)",
        )
    if exc.status == 0:
        return EngineUnavailable(
            f"MLflow server at {display} is unreachable ({exc.detail}); nothing was launched",
            hint="start the server or fix MLFLOW_TRACKING_URI; `primus-runner check --online` tests it",
        )
    return EngineUnavailable(f"MLflow server at {display} refused to create the run ({exc.detail}); nothing was launched")


def _run_url(plan: TrackedPlan, display: str, experiment_id: str, run_id: str) -> str:
    if is_databricks_uri(_tracking_uri(plan)):
        return f"{display}/ml/experiments/{experiment_id}/runs/{run_id}"
    return f"{display}/#/experiments/{experiment_id}/runs/{run_id}"


def final_status(exit_code: int) -> str:
    if exit_code == 0:
        return "FINISHED"
    return "KILLED" if exit_code in KILLED_CODES else "FAILED"


def _experiment_name(plan: TrackedPlan) -> str | None:
    """The experiment the run goes into, by name; None when the plan names it by id."""
    public = plan.public_env()
    return public.get("MLFLOW_EXPERIMENT_NAME") or (None if public.get("MLFLOW_EXPERIMENT_ID") else "Default")


def _open_run(plan: TrackedPlan, api, tags: dict[str, str]) -> tuple[str | None, str, str, str]:
    """(experiment name, experiment id, run id, artifact URI) of the run created for this launch."""
    experiment_name = _experiment_name(plan)
    try:
        if experiment_name:
            experiment_id = _get_or_create_experiment(api, experiment_name, lambda name: _EARLY.experiment(plan, api, name))
        else:
            experiment_id = plan.public_env()["MLFLOW_EXPERIMENT_ID"]
        run_id, artifact_uri = api.create_run(experiment_id, plan.trackers.run_name or plan.name, tags)
    except httpapi.HTTPFailure as exc:
        raise _unreachable(api.display, exc) from None
    return experiment_name, experiment_id, run_id, artifact_uri


def _no_handshake(plan: TrackedPlan) -> str:
    uri = _tracking_uri(plan)
    root = store_root(uri)
    if root is not None:
        return (f"MLflow: the file store {root} is not a directory on this host (nor mounted from one); the job creates its own run there "
                "(no run handshake: create the directory, and mount it into the job, for one run shared by every rank)")
    return "MLflow: the tracking URI is not a server or a directory on this host; the job creates its own run (no run handshake)"


def _mlflow_begin(plan: TrackedPlan, out: Output, hs: Handshake) -> Callable[[int, bytes], None] | None:
    api = _handshake_api(plan)
    if api is None:
        out.notice(_no_handshake(plan))
        return None
    tags = {k: out.masker.mask(v) for k, v in _EARLY.tags(plan).items()}  # names only; masked all the same
    experiment_name, experiment_id, run_id, artifact_uri = _open_run(plan, api, tags)
    hs.env["MLFLOW_RUN_ID"] = run_id
    hs.env["MLFLOW_EXPERIMENT_ID"] = experiment_id
    if experiment_name:
        hs.env["MLFLOW_EXPERIMENT_NAME"] = experiment_name
    url = api.run_path(experiment_id, run_id) if isinstance(api, FileStore) else _run_url(plan, api.display, experiment_id, run_id)
    hs.links["mlflow"] = url
    out.info(f"MLflow run '{plan.trackers.run_name or plan.name}': {url}")
    upload = bool(plan.trackers.settings.get("mlflow_upload_logs"))
    refusal = artifact_refusal(api.display, artifact_uri) if upload else None
    if refusal:
        upload = False
        out.warn(f"MLflow: the job output will not be uploaded: {refusal}")
    writer = _writer(plan, api, artifact_uri) if upload else None
    if upload and writer is None:
        out.warn(f"MLflow: the job output will not be uploaded: the artifact store {artifact_uri} needs the MLflow client ({EXTRA_HINT})")
    _load_writer(writer, artifact_uri)  # while the job starts and runs

    def finish(exit_code: int, masked_output: bytes) -> None:
        """Close the run from the exit code and upload the (masked) output, side by side; never raises: the job already ran."""
        uploading = None
        if writer is not None:
            data = out.masker.mask_bytes(masked_output)
            uploading = threading.Thread(target=_upload_log, args=(writer, run_id, artifact_uri, data, out, plan), daemon=True)
            uploading.start()
        _close_run(api, run_id, final_status(exit_code), out)
        if uploading is not None:
            uploading.join()

    return finish


def _upload_log(writer, run_id: str, artifact_uri: str, data: bytes, out: Output, plan: TrackedPlan | None = None) -> None:
    try:
        try:
            writer.upload(run_id, artifact_uri, data)
        except httpapi.HTTPFailure as exc:
            if exc.code != databricks_artifacts.NEEDS_CLIENT or plan is None or not _client_available():
                raise
            _Client(plan, max(BEGIN_TIMEOUT, UPLOAD_TIMEOUT)).upload(run_id, artifact_uri, data)  # ADLS Gen2
    except httpapi.HTTPFailure as exc:
        out.warn(f"MLflow: the job output was not uploaded to {artifact_uri}: {exc.detail}")
    except EngineUnavailable as exc:  # the client's import failed
        out.warn(f"MLflow: the job output was not uploaded to {artifact_uri}: {exc.message}")


def _close_run(api, run_id: str, status: str, out: Output) -> None:
    try:
        current = api.run_status(run_id)
        # The job's client may have closed the run FINISHED at exit (mlflow's atexit
        # does, even for a failing process): the exit code is the truth for failures.
        if current in ("RUNNING", "SCHEDULED") or (status != "FINISHED" and current == "FINISHED"):
            api.set_status(run_id, status)
    except httpapi.HTTPFailure as exc:
        out.warn(f"MLflow: could not close run {run_id} as {status}: {exc.detail}")


def prefetch(plan: TrackedPlan) -> None:
    """Start, beside the preflight, what the handshake waits for and what changes nothing: the run's tags (git)
    and, for a Databricks sign-in only the client speaks, the client's import."""
    if not plan.trackers.is_on("mlflow"):
        return
    uri = _tracking_uri(plan)
    if is_databricks_uri(uri) and _mlflow_endpoint(plan) is None and _client_available():
        _LOADER.start()
    if _handshake_api(plan) is not None:
        _EARLY.start(plan)


def check(plan: TrackedPlan, timeout: float) -> dict:
    return _check_mlflow(plan, timeout)


def begin(plan: TrackedPlan, out: Output, hs: Handshake) -> Callable[[int, bytes], None] | None:
    return _mlflow_begin(plan, out, hs)
