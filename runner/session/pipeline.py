"""One run pipeline for every engine: the steps around a launch, written once.

    the engine refuses a flag it cannot honour → config (dry run? decided once) → prepare (env,
    plan, secret scope) → what the engine refuses on this host (a dry run names it) → engine.settings → run store placement → dry run? (render the request)
    → engine preflight → engine.claim → engine.request (complete, validated, built once) →
    engine.resolve (the image, the engine's facts) → tracker run begins → its run ids given to the request by
    name → engine.launch (sends the request as is) → the config it validated is known valid
    (``config.known_valid``) → (detached: done) →
    engine.watch, in a CI log group → tracker run finishes → CI summary →
    report → audit → the exit code

Engines only launch, watch and clean up (``runner.engines.base``).
"""

from __future__ import annotations

import time
from dataclasses import replace

from runner.config import known_valid
from runner.config.switches import launcher_switch, where_set
from runner.engines.base import Connection, Engine, Launched, RunContext
from runner.errors import ConfigError, Interrupted, LeakFound, RunnerError
from runner.session.prepare import load_sources, prepare
from runner.options import RunOptions
from runner.runs.paths import new_run_id
from runner.ui import Output
from runner.ui.exits import exit_code


def run(options: RunOptions, engine: Engine, out: Output, *, layer: dict | None = None, user_files: bool = True) -> int:
    """Launch ``options.command`` on ``engine``; the job's exit code (or the runner's).

    ``layer`` is a command's own config layer below the flags (the demo's), ``user_files``
    whether ~/.primus.yaml and ./.primus.yaml are read."""
    from runner.runs import recorder as runs

    engine.refuse_unhonoured(_flags(options, engine))  # a flag the engine would drop: exit 2 before anything is decided
    loaded = load_sources(options.sources, _flags(options, engine), layer, user_files)
    dry_run = options.dry_run or launcher_switch(loaded[1], "dry_run")  # decided here, once; everything below reads it
    if options.report and not dry_run:
        from runner.session import report

        report.check_path(options.report)  # fail before launch, not after a long run
    run_id = new_run_id()  # the launch's id: its record, its default name, its container's label
    prepared = _prepare(options, engine, out, loaded, dry_run, run_id)
    plan = prepared.plan
    _refuse(engine.refusals(plan, prepared.config), dry_run, out)  # what check refuses on this host
    if options.debug or launcher_switch(prepared.config, "debug"):  # the launcher's --debug / debug: true
        plan = plan.with_env({"PRIMUS_LOG_LEVEL": "DEBUG"}, "debug")
    ctx = RunContext(options, prepared.scope, out, engine.settings(prepared.config, options), lookup=prepared.lookup,
                     config=prepared.config, dry_run=dry_run)
    run_record = runs.begin(options, engine, plan, ctx, out, prepared.config, run_id)  # run id, record, log; tracker outputs, cache
    plan = run_record.plan
    if dry_run:
        if not options.dry_run:
            out.notice(f"dry run: dry_run is set at {where_set(prepared.config, 'dry_run')}; nothing is launched")
        engine.dry_run(engine.resolve(engine.request(plan, ctx), ctx, dry_run=True), ctx)
        return 0
    try:
        plan, request, handshake, launched, began = _start(engine, plan, ctx)
    except RunnerError as exc:
        run_record.failed(exc)  # `runs show` and `logs` say why, as the user saw it
        raise
    engine.announce(launched, ctx, detached=options.detach)
    run_record.started(launched, handshake, detached=options.detach)
    known_valid.remember(prepared.config.validated)  # a launch, never a dry run: what it validated is known valid
    if options.detach:  # the job's own tracker client closes the run (MLFLOW_RUN_ID / WANDB_RUN_ID)
        return 0
    code, leaks = _watch(options, engine, launched, ctx, request, handshake)
    if launched.still_running:
        return code
    handshake.finish(code, ctx.tail.bytes())
    leaks.extend(run_record.end(code))
    _after_run(options, engine, launched, ctx, plan, code, began, handshake.links, leaks)
    return code


def _start(engine: Engine, plan, ctx: RunContext):
    """From the checked plan to the started job: the preflight, the request, the image, the tracker
    runs and their ids, the launch. (the plan as launched, the request launched, the tracker handshake, the
    job, when it began)."""
    from runner.trackers import handshake as tracker_runs  # a launch's only: a dry run starts no tracker run

    plan, request = _ready(engine, plan, ctx)
    handshake = tracker_runs.begin(plan, ctx.out)  # tracker runs exist before the job: every rank logs to the same run
    plan, request = plan.with_env(handshake.env, "tracker run"), request.with_run_env(handshake.env)  # the run ids, by name
    began = time.time()
    try:
        launched = engine.launch(request, Connection(ctx.out, ctx.scope))  # the request and where to speak: nothing else
    except BaseException as exc:
        handshake.finish(exc.exit_code if isinstance(exc, Interrupted) else 3)  # never leave a run RUNNING
        raise
    return plan, request, handshake, launched, began


def _refuse(refused: list, dry_run: bool, out: Output) -> None:
    """What this host lacks for the launch (the problems ``check`` reports, in its words): a launch
    stops here (exit 2); a dry run, which may be meant for another host, says what this one would refuse."""
    if refused and not dry_run:
        raise ConfigError(refused)
    for problem in refused:
        out.notice(f"on this host up would refuse it: {problem}")


def _flags(options: RunOptions, engine: Engine):
    flags = options.flags if options.pull is None else replace(options.flags, pull=options.pull)
    return replace(flags, host_process=True) if engine.inherits_env else flags  # planned from the user's environment


def _prepare(options: RunOptions, engine: Engine, out: Output, loaded, dry_run: bool, run_id: str):
    """Config, environment, plan and secret scope for this engine, decided once."""
    per_engine = [(name, "(per node)") for name in engine.computed_env]
    return prepare(out, options.sources, options.command, _flags(options, engine), extra_env=per_engine, loaded=loaded,
                   resolve_refs=not dry_run,  # a dry run (flag or config) runs no secret reference
                   report_unset=not (dry_run and engine.dry_run_lists_unset),
                   gpu_mode=engine.gpu_mode, run_id=run_id)  # host | node (each Slurm node) | off (no container)


def _ready(engine: Engine, plan, ctx: RunContext):
    """Everything that can refuse a launch, before a tracker run is created for it: the
    preflight, the GPUs claimed, the image resolved. The plan as claimed, and the request to launch,
    built once from it."""
    from runner.trackers import handshake as tracker_runs

    tracker_runs.prefetch(plan)  # a tracker client that must be imported starts loading now, beside the preflight
    engine.preflight(plan, ctx)  # before a tracker run is created for a launch that cannot happen
    plan = engine.claim(plan, ctx)  # the GPUs the plan chose, taken for real (free ones, under a lock)
    return plan, engine.resolve(engine.request(plan, ctx), ctx)  # the image and the engine's facts, still before any tracker run


def _watch(options: RunOptions, engine: Engine, launched: Launched, ctx: RunContext, request, handshake) -> tuple[int, list]:
    """Follow the launched job to its end, in a CI log group; its exit code and the leaks an
    audit while it ran found. The tracker run is finished if watching itself fails."""
    from runner.ui import ci

    leaks: list = []
    on_running = None
    if options.audit and not engine.audit_after:
        on_running = lambda: leaks.extend(engine.audit(launched, ctx))  # noqa: E731
    with ci.group(engine.group_title(launched, request)):  # a collapsible group in CI logs
        try:
            code = engine.watch(launched, ctx, on_running=on_running)
        except Interrupted as stop:  # said in its place; the run ends with its code (or goes on: still_running)
            code = exit_code(stop, ctx.out)
        except BaseException:
            handshake.finish(3, ctx.tail.bytes())
            raise
    return code, leaks


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
