"""One run pipeline for every engine: the steps around a launch, written once.

    prepare (config, env, plan, secret scope) → dry run? → engine preflight →
    tracker run begins → engine.request → engine.launch → (detached: done) →
    engine.watch, in a CI log group → tracker run finishes → CI summary →
    report → audit → the exit code

Engines only launch, watch and clean up (``runner.engines.base``).
"""

from __future__ import annotations

import time

from runner.engines.base import Engine, Launched, RunContext
from runner.errors import Interrupted, LeakFound
from runner.session.prepare import prepare
from runner.options import RunOptions
from runner.ui import Output


def run(options: RunOptions, engine: Engine, out: Output, *, layer: dict | None = None, user_files: bool = True) -> int:
    """Launch ``options.command`` on ``engine``; the job's exit code (or the runner's).

    ``layer`` is a command's own config layer below the flags (the demo's), ``user_files``
    whether ~/.primus.yaml and ./.primus.yaml are read."""
    from runner.ui import ci
    from runner.trackers import runs as tracker_runs

    if options.report and not options.dry_run:
        from runner.session import report

        report.check_path(options.report)  # fail before launch, not after a long run
    per_engine = [(name, "(per node)") for name in engine.computed_env]
    prepared = prepare(out, options.sources, options.command, options.flags, extra_layer=layer, extra_env=per_engine, user_files=user_files,
                       resolve_refs=not options.dry_run)  # a dry run runs no secret reference
    ctx = RunContext(options, prepared.scope, out, prepared.config, lookup=prepared.lookup)
    plan = prepared.plan
    if options.dry_run or prepared.config.get("main", "dry_run", default=False):  # the launcher's main.dry_run too
        engine.dry_run(engine.request(plan, ctx), ctx)
        return 0
    tracker_runs.prefetch(plan)  # a tracker client that must be imported starts loading now, beside the preflight
    engine.preflight(plan, ctx)  # before a tracker run is created for a launch that cannot happen
    handshake = tracker_runs.begin(plan, out)  # tracker runs exist before the job: every rank logs to the same run
    plan = plan.with_env(handshake.env, "tracker run")
    began = time.time()
    try:
        request = engine.request(plan, ctx)
        launched = engine.launch(request, ctx)
    except BaseException as exc:
        handshake.finish(exc.exit_code if isinstance(exc, Interrupted) else 3)  # never leave a run RUNNING
        raise
    engine.announce(launched, ctx, detached=options.detach)
    if options.detach:  # the job's own tracker client closes the run (MLFLOW_RUN_ID / WANDB_RUN_ID)
        return 0

    leaks: list = []
    on_running = None
    if options.audit and not engine.audit_after:
        on_running = lambda: leaks.extend(engine.audit(launched, ctx))  # noqa: E731
    with ci.group(engine.group_title(launched, request)):  # a collapsible group in CI logs
        try:
            code = engine.watch(launched, ctx, on_running=on_running)
        except BaseException:
            handshake.finish(3, ctx.tail.bytes())
            raise
    if launched.still_running:
        return code
    handshake.finish(code, ctx.tail.bytes())
    _after_run(options, engine, launched, ctx, plan, code, began, handshake.links, leaks)
    return code


def _after_run(options: RunOptions, engine: Engine, launched: Launched, ctx: RunContext, plan, code: int,
               began: float, links: dict, leaks: list) -> None:
    """Summary, report, ``--json`` result and audit of a watched run, the same for every engine."""
    from runner.session.summary import write_summary

    facts = engine.finished(launched, ctx, code)
    write_summary(plan, code, links, ctx.scope.masker)  # $GITHUB_STEP_SUMMARY: names, links, exit code
    if options.report:
        from runner.session import report

        report.write_report(
            options.report, plan=plan, started=began, ended=time.time(), exit_code=code, links=links, leaks=leaks,
            masker=ctx.scope.masker, backend=engine.name, job_id=facts.get("job_id"),
        )
    if facts and ctx.out.json_mode:
        ctx.out.json(facts)
    if options.audit and engine.audit_after:
        leaks.extend(engine.audit(launched, ctx))
    if leaks:
        found = "; ".join(str(leak) for leak in leaks)
        raise LeakFound(f"secret values found where they must never be: {found}", "treat those secrets as exposed and rotate them")
