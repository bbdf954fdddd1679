"""Trackers: the ``trackers:`` section decided (``config``), and each tracker a plug-in module
(``base.Tracker``) named in ``TRACKERS``. A new tracker is one module and one line here
(the checklist is in docs/architecture.md)."""

from __future__ import annotations

import importlib

# name -> module; in this order for the online check and the handshake. Imported on demand.
TRACKERS: dict[str, str] = {
    "tensorboard": "runner.trackers.tensorboard",
    "mlflow": "runner.trackers.mlflow",
    "wandb": "runner.trackers.wandb",
}


def tracker(name: str):
    """The tracker module named ``name`` (a ``runner.trackers.base.Tracker``)."""
    return importlib.import_module(TRACKERS[name])


def settings(name: str):
    """The ``TrackerSettings`` the tracker ``name`` declares (its ``SETTINGS``)."""
    return tracker(name).SETTINGS


def run_ids(env: dict) -> dict[str, str]:
    """{tracker: run id} for every registered tracker whose run-id variable (``run_id``) is in ``env``."""
    return {name: env[declared.run_id] for name in TRACKERS if (declared := settings(name)).run_id and declared.run_id in env}


def requeue_env(enabled_names, env: dict) -> dict[str, str]:
    """What each enabled tracker sets on a node so that a requeued job logs to the same run (``requeue_env``)."""
    found: dict[str, str] = {}
    for name in enabled_names:
        declared = settings(name)
        if declared.run_id and declared.run_id in env:
            found.update({k: v for k, v in declared.requeue_env.items() if k not in env})
    return found


def enabled(plan) -> list:
    """The trackers this plan turns on, in ``TRACKERS`` order."""
    return [tracker(name) for name in TRACKERS if plan.job.trackers.is_on(name)]


def recorded(plan) -> dict:
    """What a run's record keeps of the plan's tracker decisions, for ``runs show`` to say what each
    tracker's output holds after the job (``after_line``) without the plan."""
    return {"client_mode": plan.job.trackers.wandb_mode}


def as_recorded(kept: dict):
    """The part of a plan ``after_line`` reads, rebuilt from ``recorded(plan)``'s fields of a record."""
    from types import SimpleNamespace

    return SimpleNamespace(job=SimpleNamespace(trackers=SimpleNamespace(wandb_mode=kept.get("client_mode") or "online")))
