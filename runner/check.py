"""``check``: every problem that can be found before launch, listed at once."""

from __future__ import annotations

import os

from runner.errors import ConfigError, EngineUnavailable, Problem
from runner.options import CheckOptions
from runner.ui import Output


def _check_refs(opts: CheckOptions, out: Output, problems: list[Problem]) -> tuple[list[dict], dict]:
    """Resolve every ``secrets:`` reference once: the report (found or not, never a value)
    and the values for the plan."""
    from runner import ci
    from runner.launch import load_context

    try:
        config = load_context(opts.sources).config
    except ConfigError:
        return [], {}  # prepare reports the config's problems
    if not config.get("secrets"):
        return [], {}
    from runner.secret_refs import parse_refs, resolve_and_report

    refs, ref_problems = parse_refs(config)
    problems += ref_problems
    lookup = lambda name: os.environ.get(name, load_context(opts.sources).env_file.values.get(name))  # noqa: E731
    values, report = resolve_and_report(refs, lookup, opts.timeout, mask=ci.early_scope(opts.sources).masker.mask)
    where = {ref.name: ref.where for ref in refs}
    for item in report:
        if not item["found"]:
            problems.append(Problem(f"secret {item['name']} ({item['source']}): {item['error']}", where=where.get(item["name"])))
    return report, values


def _registry_and_builder(prepared, problems: list[Problem], details: dict) -> list[str]:
    """The image's registry credential, validated without pulling, and the image builder."""
    from runner.errors import RunnerError
    from runner.images import builder_status
    from runner.registry import check_registry

    notes = []
    try:
        notes.append(check_registry(prepared.plan.image, prepared.lookup, timeout=10))
    except RunnerError as exc:
        problems.append(Problem(exc.message, hint=exc.hint))
    builder = builder_status()
    details["builder"] = builder
    notes.append(f"builder: {builder.get('builder')}" + (f" (needs: {builder['needs']})" if builder.get('needs') else ""))
    return notes


def run_check(opts: CheckOptions, out: Output) -> int:
    from runner.launch import prepare

    problems: list[Problem] = []
    warnings: list[str] = []
    engine_error: str | None = None
    details: dict = {}  # the engine found: kind, host, version, API version
    notes: list[str] = []
    online: list[dict] = []
    prepared = None
    refs, resolved = _check_refs(opts, out, problems)
    try:
        prepared = prepare(out, opts.sources, opts.command or ("true",), opts.flags, quiet=True, resolved=resolved)
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

            preference = prepared.config.get("container", "engine", default="auto") if prepared else None
            found = engine(preference).describe()  # which engine, where, its version and the API version in use
            details.update(found)
            notes.append(f"engine: {found['engine']} {found.get('version') or ''} at {found['host']} "
                         f"({found['source']}), API {found['api_version']}")
    except EngineUnavailable as exc:
        engine_error = f"{exc.message}" + (f" ({exc.hint})" if exc.hint else "")
    if prepared is not None and prepared.planned.plan is not None and opts.engine != "slurm":
        notes += _registry_and_builder(prepared, problems, details)
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
            "engine": {"name": opts.engine, "reachable": engine_error is None, "error": engine_error, **details},
        }
        if opts.online:
            report["trackers"] = online
        if refs:
            report["secrets"] = refs
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
        for item in refs:
            out.info(f"secret {item['name']} ({item['source']}): {'found' if item['found'] else 'NOT FOUND'}")
        for note in notes:
            out.info(note)
        if ok:
            out.info("check: ok")
    if problems:
        return 2
    if engine_error:
        return 1
    return 0
