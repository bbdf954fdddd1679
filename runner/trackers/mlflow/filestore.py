"""An MLflow ``file:`` tracking store written the way MLflow's own FileStore lays it out.

The runner creates the run here before launch (as it does on a server), so every
rank and every requeue of the job logs into that one run (``MLFLOW_RUN_ID``);
nothing is imported for it, the store is a directory tree of small YAML files:

    <root>/<experiment id>/meta.yaml                  the experiment (name, artifact location)
    <root>/<experiment id>/<run id>/meta.yaml         the run (status as MLflow's integer, times)
    <root>/<experiment id>/<run id>/tags/<key>        one file per tag, the value without newline
    <root>/<experiment id>/<run id>/{metrics,params,artifacts}/
    <root>/.trash/<experiment id>/                    deleted experiments

Files are replaced by rename, so a job reading a meta.yaml never sees half of one. The job may see
the directory at another path than the host (a mount): the runner works in the host's directory
and writes every location in it as the job sees it.
"""

from __future__ import annotations

import os
import time
import urllib.parse
import uuid

from runner.trackers.httpapi import HTTPFailure
from runner.trackers.mlflow.api import Experiment
from runner.trackers.mlflow.artifacts import local_path, probe, upload

# MLflow's RunStatus integers, as its FileStore stores them.
STATUS_CODES = {"RUNNING": 1, "SCHEDULED": 2, "FINISHED": 3, "FAILED": 4, "KILLED": 5}
_STATUS_NAMES = {code: name for name, code in STATUS_CODES.items()}
_SOURCE_LOCAL = 4  # SourceType.LOCAL, what MLflow's FileStore writes for every run
DEFAULT_EXPERIMENT = ("0", "Default")


def store_root(uri: str) -> str | None:
    """The directory of a ``file:`` tracking URI or an absolute path; None for any other tracking URI or a
    relative path (one resolved inside the job's working directory, which the runner cannot see)."""
    return local_path(uri)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _read_yaml(path: str) -> dict:
    import yaml

    with open(path, encoding="utf-8") as f:
        found = yaml.safe_load(f)
    return found if isinstance(found, dict) else {}


def _write_yaml(path: str, data: dict) -> None:
    import yaml

    _replace(path, yaml.safe_dump(data, default_flow_style=False, allow_unicode=True).encode())


def _replace(path: str, data: bytes) -> None:
    """Write ``path`` whole: a temporary file beside it, renamed over it."""
    tmp = f"{path}.primus-runner-{uuid.uuid4().hex}"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _failure(exc: OSError, what: str) -> HTTPFailure:
    return HTTPFailure(0, f"{what}: {exc.strerror or exc}")


class FileStore:
    """The calls the MLflow handshake makes of a tracking API (``mlflow_rest.Rest``, ``mlflow_client.Client``), on a directory."""

    def __init__(self, root: str, job_root: str | None = None):
        self.root = root  # on the host
        self.job_root = job_root or root  # where the job sees it
        self.display = "file://" + self.job_root

    def host_path(self, location: str) -> str | None:
        """A location as the job sees it, on the host; None outside the store."""
        path = local_path(location)
        if path is None:
            return None
        rest = os.path.relpath(path, self.job_root)
        return None if rest == ".." or rest.startswith("../") else os.path.normpath(os.path.join(self.root, rest))

    def run_path(self, experiment_id: str, run_id: str) -> str:
        return os.path.join(self.root, experiment_id, run_id)

    def _experiments(self):
        """(id, meta, deleted) of every experiment, active ones first."""
        for parent, deleted in ((self.root, False), (os.path.join(self.root, ".trash"), True)):
            try:
                names = sorted(os.listdir(parent))
            except FileNotFoundError:
                continue
            for name in names:
                meta = os.path.join(parent, name, "meta.yaml")
                if name.startswith(".") or not os.path.isfile(meta):
                    continue
                try:
                    yield name, _read_yaml(meta), deleted
                except (OSError, ValueError):
                    continue  # a half-written or foreign directory: MLflow skips it too

    def _ensure_root(self) -> None:
        """A new store, as MLflow's FileStore starts one: the root, its trash, the Default experiment."""
        if os.path.isdir(os.path.join(self.root, DEFAULT_EXPERIMENT[0])):
            return
        os.makedirs(os.path.join(self.root, ".trash"), exist_ok=True)
        try:
            self._write_experiment(*DEFAULT_EXPERIMENT)
        except FileExistsError:
            pass  # another launch made it first

    def search(self) -> int:
        return sum(1 for _ in self._experiments())

    def experiment(self, name: str) -> Experiment | None:
        try:
            for exp_id, meta, deleted in self._experiments():
                if meta.get("name") == name:
                    gone = deleted or meta.get("lifecycle_stage") == "deleted"
                    return Experiment(str(meta.get("experiment_id", exp_id)), gone, str(meta.get("artifact_location") or ""))
        except OSError as exc:
            raise _failure(exc, f"the file store {self.root} cannot be read") from None
        return None

    def _write_experiment(self, exp_id: str, name: str) -> str:
        directory = os.path.join(self.root, exp_id)
        os.mkdir(directory)  # FileExistsError: taken
        now = _now_ms()
        _write_yaml(os.path.join(directory, "meta.yaml"), {
            "artifact_location": "file://" + urllib.parse.quote(os.path.join(self.job_root, exp_id)), "creation_time": now,
            "effective_trace_archival_retention": None, "experiment_id": exp_id, "last_update_time": now,
            "lifecycle_stage": "active", "name": name, "trace_location": None, "workspace": "default"})
        return exp_id

    def create_experiment(self, name: str) -> str | None:
        try:
            self._ensure_root()
            if name == DEFAULT_EXPERIMENT[1]:
                return DEFAULT_EXPERIMENT[0]
            # MLflow's FileStore ids: 18 random digits
            return self._write_experiment(str(uuid.uuid4().int)[-18:].rjust(18, "1"), name)
        except FileExistsError:
            return None
        except OSError as exc:
            raise _failure(exc, f"the file store {self.root} is not writable") from None

    def create_run(self, experiment_id: str, run_name: str, tags: dict[str, str]) -> tuple[str, str]:
        run_id = uuid.uuid4().hex
        try:
            self._ensure_root()
            exp_dir = os.path.join(self.root, experiment_id)
            location = _read_yaml(os.path.join(exp_dir, "meta.yaml")).get("artifact_location") or "file://" + os.path.join(self.job_root, experiment_id)
            artifact_uri = f"{str(location).rstrip('/')}/{run_id}/artifacts"
            run_dir = os.path.join(exp_dir, run_id)
            os.mkdir(run_dir)
            for sub in ("metrics", "params", "artifacts", "tags"):
                os.mkdir(os.path.join(run_dir, sub))
            for key, value in {**tags, "mlflow.runName": run_name}.items():
                _replace(os.path.join(run_dir, "tags", key), value.encode())
            _write_yaml(os.path.join(run_dir, "meta.yaml"), {
                "artifact_uri": artifact_uri, "end_time": None, "entry_point_name": "", "experiment_id": experiment_id,
                "lifecycle_stage": "active", "run_id": run_id, "run_uuid": run_id, "run_name": run_name, "source_name": "",
                "source_type": _SOURCE_LOCAL, "source_version": "", "start_time": _now_ms(), "status": STATUS_CODES["RUNNING"],
                "tags": [], "user_id": tags.get("mlflow.user", "unknown"), "deleted_time": None})
        except FileNotFoundError:
            raise HTTPFailure(404, f"experiment {experiment_id} does not exist in {self.root}", "RESOURCE_DOES_NOT_EXIST") from None
        except OSError as exc:
            raise _failure(exc, f"the file store {self.root} is not writable") from None
        return run_id, artifact_uri

    def _run_meta(self, run_id: str) -> str:
        for exp_id, _meta, _deleted in self._experiments():
            path = os.path.join(self.root, exp_id, run_id, "meta.yaml")
            if os.path.isfile(path):
                return path
        raise HTTPFailure(404, f"run {run_id} is not in {self.root}", "RESOURCE_DOES_NOT_EXIST")

    def run_status(self, run_id: str) -> str:
        try:
            status = _read_yaml(self._run_meta(run_id)).get("status", STATUS_CODES["RUNNING"])
        except OSError as exc:
            raise _failure(exc, f"run {run_id} cannot be read") from None
        return _STATUS_NAMES.get(status, str(status)) if isinstance(status, int) else str(status)

    def set_status(self, run_id: str, status: str) -> None:
        try:
            path = self._run_meta(run_id)
            meta = _read_yaml(path)
            meta.update(status=STATUS_CODES[status], end_time=_now_ms())
            _write_yaml(path, meta)
        except OSError as exc:
            raise _failure(exc, f"run {run_id} cannot be closed") from None

    def _on_host(self, location: str) -> str:
        host = self.host_path(location)
        if host is None:  # an experiment with its own artifact location: a store of its own
            raise HTTPFailure(0, f"{location} is outside the file store {self.job_root}, where the runner writes")
        return "file://" + urllib.parse.quote(host)

    def upload(self, run_id: str, artifact_uri: str, data: bytes) -> None:
        try:
            upload(self._on_host(artifact_uri), data)
        except OSError as exc:
            raise _failure(exc, f"the log could not be written to {artifact_uri}") from None

    def probe(self, location: str) -> None:
        try:
            probe(self._on_host(location))
        except OSError as exc:
            raise _failure(exc, f"{location} is not writable") from None
