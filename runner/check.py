"""``check``: every problem that can be found before launch, listed at once."""

from __future__ import annotations

import os

from runner.errors import ConfigError, EngineUnavailable, Problem
from runner.options import CheckOptions
from runner.ui import Output


def run_check(opts: CheckOptions, out: Output) -> int:
    from runner.launch import prepare

    problems: list[Problem] = []
    warnings: list[str] = []
    engine_error: str | None = None
    online: list[dict] = []
    prepared = None
    try:
        prepared = prepare(out, opts.sources, opts.command or ("true",), opts.flags, quiet=True)
    except ConfigError as exc:
        problems += exc.problems
    if prepared is not None:
        planned = prepared.planned
        problems += planned.problems
        warnings += planned.warnings
        if planned.plan:
            warnings += list(planned.plan.notices)
            for device in planned.plan.devices:
                path = device.split(":")[0]
                if not os.path.exists(path):
                    problems.append(
                        Problem(
                            f"device {path} (needed by --gpu {planned.plan.gpu}) does not exist on this host",
                            hint="install the GPU driver, or run with --gpu none / the other flavor",
                        )
                    )
    try:
        if opts.engine == "slurm":
            from runner.engines.slurm import jobs

            warnings += jobs.check_engine()
        else:
            from runner.engines.docker.commands import engine

            engine().ping()
    except EngineUnavailable as exc:
        engine_error = f"{exc.message}" + (f" ({exc.hint})" if exc.hint else "")
    if opts.online and prepared is not None and prepared.planned.plan is not None:
        from runner import tracker_runs

        online = tracker_runs.online_check(prepared.planned.plan, prepared.planned, timeout=opts.timeout)
        for item in online:
            if item["status"] not in ("reachable", "skipped"):
                problems.append(Problem(f"{item['tracker']}: {item['status']}: {item['detail']}"))

    ok = not problems and engine_error is None
    if out.json_mode:
        report = {
            "ok": ok,
            "problems": [{"message": p.message + (f" ({p.hint})" if p.hint else ""), "where": p.where} for p in problems],
            "warnings": warnings,
            "engine": {"name": opts.engine, "reachable": engine_error is None, "error": engine_error},
        }
        if opts.online:
            report["trackers"] = online
        out.json(report)
    else:
        for warning in warnings:
            out.warn(warning)
        from runner import ci

        if not ci.report_problems(problems, out.masker):  # GitHub Actions: file/line annotations
            for problem in problems:
                out.error(str(problem))
        if engine_error:
            out.error(engine_error)
        for item in online:
            out.info(f"{item['tracker']}: {item['status']} - {item['detail']}")
        if ok:
            out.info("check: ok")
    if problems:
        return 2
    if engine_error:
        return 1
    return 0
