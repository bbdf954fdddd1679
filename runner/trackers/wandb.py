"""Weights & Biases as a tracker: the run id chosen before launch (``WANDB_RUN_ID``, so every
rank logs to one run), the API key checked by ``check --online``; offline modes contact nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runner.trackers.base import Handshake, TrackedPlan
from runner.trackers.wandb_settings import OFFLINE_WANDB_MODES, SETTINGS  # noqa: F401 (SETTINGS: its declaration)
from runner.ui import Output

if TYPE_CHECKING:
    from runner.trackers import httpapi

NAME = "wandb"
RUN_ENV = ("WANDB_RUN_ID",)  # what begin() hands the job


WANDB_DEFAULT_BASE = "https://api.wandb.ai"


def _wandb_endpoint(plan: TrackedPlan) -> "httpapi.Endpoint":
    from runner.trackers import httpapi  # the HTTP stack: a launch's (a plan reads SETTINGS only)

    public = plan.job.public_env()
    base = (public.get("WANDB_BASE_URL") or WANDB_DEFAULT_BASE).strip().rstrip("/")
    base, _, _ = httpapi.split_userinfo(base)
    key = plan.job.secret_env().get("WANDB_API_KEY")
    return httpapi.Endpoint("wandb", base, base, "basic" if key else "none", "api", key)


def _wandb_mode(plan: TrackedPlan) -> str:
    return (plan.job.public_env().get("WANDB_MODE") or plan.job.trackers.wandb_mode or "online").strip().lower()


def _check_wandb(plan: TrackedPlan, timeout: float) -> dict:
    from runner.trackers import httpapi

    mode = _wandb_mode(plan)
    if mode in OFFLINE_WANDB_MODES:
        return httpapi.status("wandb", "skipped", f"WANDB_MODE={mode}: the job does not contact W&B")
    ep = _wandb_endpoint(plan)
    if ep.secret is None:
        return httpapi.status("wandb", "unauthorised", "WANDB_API_KEY is not set")
    query = {"query": "query Viewer { viewer { id username entity } }"}
    try:
        answer = httpapi.request(ep, "POST", "/graphql", body=query, timeout=timeout)
    except httpapi.HTTPFailure as exc:
        return httpapi.status("wandb", httpapi.failure_status(exc), f"{ep.display}: {exc.detail}")
    viewer = (answer.get("data") or {}).get("viewer") if isinstance(answer, dict) else None
    if not viewer:
        return httpapi.status("wandb", "unauthorised", f"{ep.display} did not accept WANDB_API_KEY")
    who = viewer.get("entity") or viewer.get("username")
    return httpapi.status("wandb", "reachable", f"{ep.display} accepted WANDB_API_KEY" + (f" (entity {who})" if who else ""))


_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"  # W&B's own run ids


def new_wandb_run_id() -> str:
    """8 characters of [a-z0-9], the shape wandb's own ids have."""
    import secrets  # a launch's, not a plan's import

    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(8))


def _wandb_begin(plan: TrackedPlan, out: Output, hs: Handshake) -> None:
    public = plan.job.public_env()
    run_id = public.get("WANDB_RUN_ID") or new_wandb_run_id()
    hs.env["WANDB_RUN_ID"] = run_id
    project = public.get("WANDB_PROJECT") or "uncategorized"
    entity = public.get("WANDB_ENTITY") or public.get("WANDB_TEAM")
    mode = _wandb_mode(plan)
    if mode in ("offline", "dryrun"):
        where = public.get("WANDB_DIR") or "<job working directory>"
        path = f"{where.rstrip('/')}/wandb/offline-run-*-{run_id}"  # inside the job; its host path is printed with the tracker outputs
        out.info(f"W&B run {run_id} (offline, project {project}); its `wandb sync` command comes with the run's end")
    elif mode == "disabled":
        path = f"disabled/{project}/runs/{run_id}"
    else:
        path = f"{entity or '<default entity>'}/{project}/runs/{run_id}"
        base = (public.get("WANDB_BASE_URL") or WANDB_DEFAULT_BASE).rstrip("/")
        shown = f"https://wandb.ai/{path}" if base == WANDB_DEFAULT_BASE and entity else path
        out.info(f"W&B run: {shown}")
    hs.links["wandb"] = path


def prefetch(plan: TrackedPlan) -> None:
    """Nothing to load ahead: W&B's handshake is a run id chosen here."""


def check(plan: TrackedPlan, timeout: float) -> dict:
    return _check_wandb(plan, timeout)


def begin(plan: TrackedPlan, out: Output, hs: Handshake):
    _wandb_begin(plan, out, hs)
    return None  # the job's own client closes the run
