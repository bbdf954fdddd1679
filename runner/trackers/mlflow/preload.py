"""The handshake's work that changes nothing, started beside the preflight (``prefetch``) so the
launch does not wait for it: the git facts for the run's tags, the experiment looked up over
REST or in the file store, and, for a Databricks sign-in only the client speaks, the client's
import. ``begin`` takes what was found when it was made for the same store and directory, and
does it itself otherwise."""

from __future__ import annotations

import getpass
import os
import threading

from runner import __version__
from runner.git import git
from runner.trackers import httpapi
from runner.trackers.mlflow import client as mlflow_client
from runner.trackers.base import TrackedPlan
from runner.trackers.mlflow.endpoint import endpoint, experiment_name, tracking_uri
from runner.trackers.mlflow.filestore import FileStore
from runner.trackers.mlflow.rest import Rest
from runner.trackers.mlflow.settings import is_databricks_uri
from runner.trackers.mlflow.stores import tracking_api

TAG_LIMIT = 5000  # MLflow's limit on a tag value


def run_tags(plan: TrackedPlan, git_facts: dict[str, str] | None = None) -> dict[str, str]:
    """The tags the runner puts on a run it creates: facts and NAMES, never a value (``git_facts``: ``_git_tags()``)."""
    tags = {
        "primus-runner.version": __version__,
        "primus-runner.image": plan.container.image,
        "primus-runner.job": plan.job.name,
        "primus-runner.framework": plan.job.trackers.framework,
        "primus-runner.config_hash": plan.job.trackers.config_hash,
        "primus-runner.forwarded_env": ",".join(sorted(d.name for d in plan.job.forwarded))[:TAG_LIMIT],
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


class Early:
    """The git facts and the experiment lookup, made in a thread for one (store, directory, experiment, mounts)."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._thread: threading.Thread | None = None
        self._git: dict[str, str] | None = None
        self._found: tuple | None = None  # (experiment name, Experiment | None | HTTPFailure)

    @staticmethod
    def _key_of(plan: TrackedPlan) -> tuple:
        return tracking_uri(plan), os.getcwd(), experiment_name(plan), tuple(str(m) for m in plan.container.mounts)

    def start(self, plan: TrackedPlan) -> None:
        if self._thread is not None and self._key == self._key_of(plan):
            return
        self._key, self._git, self._found = self._key_of(plan), None, None
        api, name = tracking_api(plan), experiment_name(plan)

        def work() -> None:
            self._git = _git_tags()
            if name and isinstance(api, (Rest, FileStore)):  # the client reads os.environ: not beside the preflight
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


EARLY = Early()


def prefetch(plan: TrackedPlan) -> None:
    """Start, beside the preflight, what the handshake waits for and what changes nothing: the run's tags (git)
    and, for a Databricks sign-in only the client speaks, the client's import."""
    if not plan.job.trackers.is_on("mlflow"):
        return
    uri = tracking_uri(plan)
    if is_databricks_uri(uri) and endpoint(plan) is None and mlflow_client.installed():
        mlflow_client.LOADER.start()
    if tracking_api(plan) is not None:
        EARLY.start(plan)
