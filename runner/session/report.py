"""``--report FILE``: a JSON record of one run for pipelines to archive.

The plan is the redacted ``LaunchPlan.to_dict()`` (secret values are ``***``),
the whole document is masked once more with the run's masker (a non-secret
variable might still carry a secret's value), and the file is written
atomically with mode 0600: a pipeline never archives half a report.
The shape is ``policies/report.schema.json``.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from runner import __version__
from runner.errors import RuntimeFailure, UsageError

if TYPE_CHECKING:
    from runner.launch_plan import LaunchPlan
    from runner.secrets import Masker

SCHEMA_VERSION = 1


def check_path(path: str) -> None:
    """Refuse, before launch, a report path that cannot be written (exit 2: nothing launched)."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise UsageError(f"--report {path} is a directory", hint="give a file name, e.g. --report report.json")
    if not parent.is_dir():
        raise UsageError(f"--report {path}: directory {parent} does not exist", hint=f"create it first: mkdir -p {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"--report {path}: directory {parent} is not writable", hint="choose a writable location")


def _iso(moment: float | None) -> str | None:
    """A ``time.time()`` stamp (what the pipeline records) as ISO 8601, UTC."""
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, tz=timezone.utc).isoformat(timespec="milliseconds")


def _leak(item: Any) -> dict:
    if isinstance(item, Mapping):
        return {"secret": str(item.get("secret") or item.get("name") or "?"), "location": str(item.get("location", ""))}
    if hasattr(item, "secret") and hasattr(item, "location"):
        return {"secret": str(item.secret), "location": str(item.location)}
    return {"secret": "?", "location": str(item)}


def build_report(
    *,
    plan: "LaunchPlan",
    started: float | None,
    ended: float | None,
    exit_code: int | None,
    links: Mapping[str, str] | None = None,
    leaks: Iterable[Any] = (),
    backend: str | None = None,
    job_id: str | None = None,
    run_ids: Mapping[str, str] | None = None,
) -> dict:
    """The report as a JSON-ready dict (see ``policies/report.schema.json``)."""
    from runner.ui.ci import safe_link

    from runner.trackers import run_ids as handed

    run_ids = {**handed(plan.job.public_env()), **(run_ids or {})}  # the ids the runner handed the job, as each tracker names its own
    start_s, end_s = _iso(started), _iso(ended)
    duration = None
    if started is not None and ended is not None:
        duration = round(ended - started, 3)
    leak_list = [_leak(item) for item in leaks]
    return {
        "schema_version": SCHEMA_VERSION,
        "runner_version": __version__,
        "backend": backend,
        "job_id": job_id,
        "started": start_s,
        "ended": end_s,
        "duration_seconds": duration,
        "exit_code": exit_code,
        "status": "succeeded" if exit_code == 0 else "failed",
        "plan": plan.to_dict(),
        "trackers": {
            "links": {k: safe_link(v) for k, v in (links or {}).items()},
            "run_ids": run_ids,
        },
        "leaks": leak_list,
        "leak_found": bool(leak_list),
    }


def write_report(path: str | os.PathLike, *, masker: "Masker | None" = None, **fields: Any) -> None:
    """Write the report (``build_report(**fields)``) atomically: temp file in the same directory,
    then rename, mode 0600, masked once more with the run's masker.

    Raises ``RuntimeFailure`` when the file cannot be written; call ``check_path``
    before launch so that only happens for reasons that appear mid-run.
    """
    report = build_report(**fields)
    text = json.dumps(report, indent=2, sort_keys=False) + "\n"  # raises on a Secret: none can slip in
    if masker is not None:
        text = masker.mask(text)
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)  # mode 0600
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise RuntimeFailure(f"cannot write the report {target}: {exc.strerror or exc}", hint="check the path and free space")
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
