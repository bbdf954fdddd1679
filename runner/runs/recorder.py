"""The pipeline's hook: ``begin`` before the launch, ``Run.started`` once it runs, ``Run.end`` after it.

``begin`` decides the run's id and directory, mounts the tracker outputs and the
cache into the plan (pure, so a dry run shows them and creates nothing), then
takes the run's lock, writes the record (state ``running``) and points the
context's tail at the run's log. Nothing here may stop a launch: a state
directory that cannot be written is one warning and the job runs unrecorded.
A runner that exits without ``end`` (an error, an engine gone mid-run) leaves a
record that says so, written at exit.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import ConfigError
from runner.runs import cache, liveness, outputs, paths

# The writer (its thread, the store's sqlite3) and the log are imported where a launch uses them:
# a dry run (`plan`) decides the run's mounts and writes nothing.
if TYPE_CHECKING:
    from runner.runs.logdir import RunLog
    from runner.runs.writer import Writer


class Run:
    def __init__(self, plan, run_id: str, out, *, dry: bool = False):
        self.plan, self.id, self.out, self.dry = plan, run_id, out, dry
        self.began = time.time()  # the launch's start, for its last line
        self.engine = None  # the engine it runs on: what its record holds (runner.engines.base.Recorded)
        self.dir: Path | None = None
        self.job_dir: Path | None = None  # an engine on nodes (Slurm): where the job's files go (the nodes see it)
        self.node_cache: dict | None = None  # an engine on nodes: what each node mounts as its own cache
        self.outputs: list = []
        self.cache_dir: Path | None = None
        self.log: RunLog | None = None
        self.record: dict | None = None
        self.masker = None
        self.scope = None
        self.launched = None
        self.audit = False
        self.writer: Writer | None = None  # the store's writes, on their own thread
        self._lock: int | None = None
        self._ended = False
        self._warned = False
        self.reason = None  # the RunnerError that stopped the launch before the job started

    # ---------------------------------------------------------------- writes that never stop a launch
    def _warn_once(self, problem) -> None:
        """One warning per run for what keeps its record or log from being written (a full disk
        fails both: said once)."""
        if self._warned:
            return
        self._warned = True
        from runner.runs.store import StoreError  # the store (sqlite3) is the writer thread's: `plan` never imports it

        if isinstance(problem, str):
            self.out.warn(problem)
        elif isinstance(problem, StoreError):
            self.out.warn(f"{problem.message}: this run is not recorded (the job runs all the same); fix: {problem.hint}")
        else:
            self.out.warn(f"this run's record could not be written ({type(problem).__name__}: {problem}); the job runs all the same")

    def _save(self) -> None:
        """Hand the record's current state to the writer (a snapshot: the record goes on changing)."""
        if self.record is not None:
            self._writer().put(json.dumps(self.record, sort_keys=True))  # a Secret refuses to serialise, here

    def _writer(self) -> "Writer":
        if self.writer is None:
            from runner.runs.writer import Writer

            self.writer = Writer(self._warn_once, self.masker)
        return self.writer

    def _flush(self) -> None:
        if self.writer is not None:
            self.writer.flush()

    @property
    def lock_fd(self) -> int | None:
        """The descriptor holding the run's lock: what follows a detached job holds it too (``logs -f``)."""
        return self._lock

    def placement(self):
        """What of this run its engine uses (``runner.engines.base.RunPlacement``)."""
        from runner.engines.base import RunPlacement

        return RunPlacement(self.id, self.job_dir, self.node_cache, self._lock)

    # ---------------------------------------------------------------- the pipeline's calls
    def started(self, launched, handshake, detached: bool) -> None:
        """The job runs: its engine id, the tracker runs, where its output goes."""
        self.launched = launched
        if self.record is None:
            return
        rec = self.record
        rec["detached"] = bool(detached)
        from runner.trackers import run_ids

        rec["trackers"]["run_ids"] = run_ids(handshake.env)
        rec["trackers"]["links"] = dict(handshake.links)
        rec.update(self.engine.record_started(launched, self.job_dir))  # the engine says (a container, a Slurm job, a pid)
        if rec.get("container_id"):  # a container's image digest, from the socket that knows it
            self._digest_soon(rec.get("engine_host"))
        self._save()
        if self.writer is not None:
            self.writer.go()
        if detached:  # the runner's part ends here; `runs` asks the engine for the job's end
            if self.dir is not None and not self.out.json_mode:
                self.out.info(self._later())
            self._ended = True
            if self.log is not None:
                self.log.close()  # the keeper writes it from now on
            self._flush()
            liveness.release(self._lock)

    def _later(self) -> str:
        """What a detached run's user can run later (nothing follows the job to print it at its end)."""
        return (f"run {self.id}: `primus-runner logs {self.id} -f` follows its output; once it has ended, "
                f"`primus-runner runs show {self.id}` gives its exit code and what its trackers wrote (an offline run's sync command)")

    def _digest_soon(self, host: str | None) -> None:
        """The image's digest, asked on the writer's thread (its own engine client) while the job runs."""
        writer, image = self._writer(), self.plan.container.image

        def ask() -> None:
            digest = _image_digest(host, image)
            if digest:
                writer.fill["image_digest"] = digest

        writer.submit(ask)

    def end(self, code: int) -> list:
        """The job ended with ``code``: close the log, finish the record, say where the outputs are;
        the audit's findings in the run's directory and cache (with ``--audit``)."""
        self._ended = True
        if self.log is not None:
            self.log.close()
        if self.record is not None:
            from runner.runs import record  # a launch's only (datetime, getpass): a dry run writes no record

            record.finish(self.record, code, time.time())
            self._save()
            self._flush()
        liveness.release(self._lock)
        from runner.trackers import run_ids

        ids = {**run_ids(self.plan.job.public_env()), **(self.record or {}).get("trackers", {}).get("run_ids", {})}
        for line in outputs.after(self.outputs, self.plan, ids):
            self.out.info(line)
        if not self.out.json_mode:
            self.out.info(self._result(code))
        return self._audit() if self.audit else []

    def _result(self, code: int) -> str:
        """The launch's last line: the job's exit code, how long the launch took, the run to look at later."""
        from runner.runs.record import duration_text

        said = f"exit {code} after {duration_text(time.time() - self.began)}"
        if self.dir is not None and self.writer is not None and self.writer.stored:
            return f"{said}, run {self.id} (primus-runner runs show {self.id}; primus-runner logs {self.id})"
        return f"{said} (not recorded)"

    def failed(self, exc) -> None:
        """The launch stopped before the job started, for this reason (kept at exit: ``_at_exit``)."""
        self.reason = exc

    def _audit(self) -> list:
        from runner.secrets.scan import audit_paths

        targets = [p for p in (self.dir, self.cache_dir) if p is not None and p.exists()]
        return audit_paths(targets, self.scope) if targets else []

    def _at_exit(self) -> None:
        """The runner exits without ``end``: say what is known, never leave ``running`` behind."""
        if self._ended or self.record is None:
            return
        from runner.runs import record

        said = _as_said(self.reason, self.masker) if self.launched is None and self.reason is not None else ""
        if self.log is not None:
            self.log.add(said.encode())  # `logs RUN` prints the error the user saw
            self.log.close()
        if self.launched is None:
            record.finish(self.record, None, time.time(), "error")
            self.record["note"] = "the runner stopped before the job started" + (f": {said.splitlines()[0]}" if said else "")
        elif getattr(self.launched, "still_running", False):
            self.record["detached"] = True  # the runner stopped following; the job goes on
        else:
            record.finish(self.record, None, time.time(), "unknown")
            self.record["note"] = "the runner stopped following the job before it ended; its exit code is unknown"
        self._save()
        self._flush()
        liveness.release(self._lock)


def _as_said(exc, masker) -> str:
    """A runner error as the CLI printed it (``error: …``, ``  fix: …``), masked."""
    text = f"error: {exc.message}\n" + (f"  fix: {exc.hint}\n" if exc.hint else "")
    return masker.mask(text) if masker is not None else text


def _image_digest(host: str | None, image: str) -> str | None:
    from runner.clients.engine_api.shared import thread_client

    if not host:
        return None
    try:
        info = thread_client(host).image_config(image)
    except Exception:  # the record goes without it; the job already ran
        return None
    if info is None:
        return None
    digests = info.get("RepoDigests") or []
    return digests[0] if digests else info.get("Id")


def _setting(config, key: str, default: Any) -> Any:
    return config.get("runs", key, default=default) if config is not None else default


def _on_nodes(engine) -> bool:
    """The job runs on other hosts (Slurm): its files in a job directory, a cache per node, no runner log."""
    return engine.runs_on_nodes


def _job_dir(engine, config, run_id: str, name: str) -> Path | None:
    """Where the engine puts the job's files (the record points there); None: it has no job directory."""
    return engine.job_dir(config, run_id, name)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _creatable(path: Path) -> bool:
    """Whether ``path`` exists as a directory or could be made (its nearest existing parent is writable):
    read-only, so a dry run and a launch decide the same placement."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
    return False


def _settle_job_dir(run: Run, engine, out, has_run_dir: bool) -> None:
    """A job directory under the run's own directory needs that directory and nodes that see it; else
    the job's files go to ``./primus-runs/<run id>-<name>`` (as before the state location), and a notice
    says why. Decided from what can be read, the same in a dry run and a launch."""
    if run.job_dir is None or not run.job_dir.is_relative_to(paths.runs_dir() / run.id):
        return  # a directory the user chose (slurm.output_dir)
    if not has_run_dir:
        why = "there is no run directory (runs.record: false, or the state directory cannot be written)"
    else:
        why = engine.job_dir_unseen(paths.state_dir())
    if why is None:
        return
    run.job_dir = (Path.cwd() / "primus-runs" / f"{run.id}-{_safe(run.plan.job.name)}").absolute()
    setting = engine.job_dir_setting
    if has_run_dir:
        out.notice(f"this job's files go to {run.job_dir}, not under the state directory: {why}"
                   + (f"; set {setting} to a directory every node sees" if setting else ""))


def begin(options, engine, plan, ctx, out, config, run_id: str | None = None) -> Run:
    """The run for this launch; ``run.plan`` is the plan to launch. Raises ``ConfigError`` (exit 2,
    nothing written) only for a tracker output the settings say to refuse. ``config``: the merged config;
    ``run_id``: the launch's, decided before its plan (which names a job after it)."""
    dry = ctx.dry_run
    run = Run(plan, run_id or paths.new_run_id(), out, dry=dry)
    run.masker, run.scope, run.audit = ctx.scope.masker, ctx.scope, bool(options.audit)
    run.engine = engine
    recording = bool(_setting(config, "record", True))  # runs.record: false: no record, run directory or log
    # The placement (job directory, outputs, cache mount) is decided here, from reads only: the
    # dry run shows what the launch uses (tests/unit/runs/test_recorder.py).
    run.job_dir = _job_dir(engine, config, run.id, plan.job.name)
    _settle_job_dir(run, engine, out, recording and _creatable(paths.runs_dir()))
    uncached = _plan_mounts(run, engine, config, options.flags.host_process)
    ctx.run = run.placement()  # the dry run renders the job directory a launch would use
    if dry:
        return run
    if recording:
        _make_run_dir(run, out)
    _make_output_dirs(run, out)
    _make_cache_dir(run, out, uncached)
    on_nodes = _on_nodes(engine)
    if run.dir is not None and not on_nodes:  # detached, the engine's keeper writes it (runner.engines.docker.keeper)
        from runner.runs.logdir import DEFAULT_LIMIT_MB, LOG_NAME, RunLog

        limit = int(_setting(config, "log_limit_mb", DEFAULT_LIMIT_MB)) << 20
        run.log = RunLog(run.dir / LOG_NAME, limit, run._warn_once)
        ctx.tail = run.log
    if run.dir is not None:
        run._lock = liveness.hold(run.dir)
        ctx.run = run.placement()  # and the lock a detached job's keeper holds
    for line in outputs.before(run.outputs):
        out.info(line)
    if recording and run.dir is not None:
        run.record = _initial_record(run, engine.name, options, config, on_nodes)
        run._save()  # the first write: on the writer's thread, once the job runs (runner.runs.writer)
        atexit.register(run._at_exit)
    return run


def _plan_mounts(run: Run, engine, config, host_process: bool = False):
    """Pure: the tracker outputs' and the cache's mounts into ``run.plan`` (a dry run shows them);
    the plan without the cache, should the cache directory not be made."""
    plan, on_nodes = run.plan, _on_nodes(engine)
    # A process on the host (direct mode) writes where its paths say, into the host's own caches:
    # no container, so nothing to mount and nothing to redirect.
    if not engine.runs_in_container or host_process:
        return plan
    outputs_dir = _outputs_dir(run)
    plan, run.outputs, problems = outputs.plan_outputs(plan, _setting(config, "tracker_outputs", "mount"), outputs_dir, on_nodes,
                                                       where=config.where if config is not None else None)
    if problems:
        raise ConfigError(problems)
    uncached, settings = plan, cache.settings(config)
    if settings.enabled and plan.container.image:
        if on_nodes:
            run.node_cache = {"dir": settings.node_dir, "key": cache.image_key(plan.container.image)}
        elif _creatable(cache.host_dir(settings.dir, plan.container.image)):
            run.cache_dir = cache.host_dir(settings.dir, plan.container.image)
            plan = cache.apply(plan, run.cache_dir)
        else:  # a bind mount of a directory that cannot be made would fail the launch
            run.out.warn(f"the job cache {cache.host_dir(settings.dir, plan.container.image)} cannot be created; it is not mounted and "
                         "the job compiles from scratch (set cache.dir to a writable place, or cache.enabled: false)")
    run.plan = plan
    return uncached


def _make_run_dir(run: Run, out) -> None:
    run_dir = paths.runs_dir() / run.id
    try:
        run_dir.mkdir(parents=True, mode=0o700)
        paths.state_dir().chmod(0o700)
        run.dir = run_dir
    except OSError as exc:
        out.warn(f"the state directory {paths.state_dir()} is not writable ({exc.strerror or exc}): this run is not recorded "
                 "and its output is not kept (the job runs all the same); fix its permissions, or set XDG_STATE_HOME")
        run._warned = True


def _make_cache_dir(run: Run, out, uncached) -> None:
    if run.cache_dir is None:
        return
    try:
        cache.make_dir(run.cache_dir)
    except OSError as exc:
        out.warn(f"the job cache {run.cache_dir} cannot be created ({exc.strerror or exc}); it is not mounted and "
                 "the job compiles from scratch (set cache.dir to a writable place, or cache.enabled: false)")
        run.cache_dir, run.plan = None, uncached  # a bind mount of a missing directory would fail the launch


def _initial_record(run: Run, engine_name: str, options, config, on_nodes: bool) -> dict:
    from runner.runs.logdir import LOG_NAME

    if run.cache_dir:
        where = {"host": str(run.cache_dir), "target": cache.TARGET}
    elif run.node_cache:
        where = {"node_dir": run.node_cache["dir"], "target": cache.TARGET}
    else:
        where = None
    from runner.runs import record  # a launch's only (datetime, getpass): a dry run writes no record

    return record.initial(run.id, run.plan, engine_name, started=time.time(), run_dir=run.dir,
                          log=None if on_nodes else run.dir / LOG_NAME, outputs=run.outputs, cache=where,
                          sources=options.sources, detached=bool(options.detach),
                          pid_start=liveness.process_start(os.getpid()), job_dir=run.job_dir)


def _outputs_dir(run: Run) -> Path:
    """Where the run's tracker outputs go: under its job or run directory, else (that cannot be made)
    a temporary directory named by the run id. Decided before the dry run, from reads only."""
    home = run.job_dir or paths.runs_dir() / run.id
    return home / "outputs" if _creatable(home) else Path(tempfile.gettempdir()) / f"primus-runner-outputs-{run.id}"


def _make_output_dirs(run: Run, out) -> None:
    """The per-run output directories where ``_outputs_dir`` placed them (a temporary one: made ours alone)."""
    try:
        if not run.outputs:
            return
        temporary = Path(tempfile.gettempdir()) / f"primus-runner-outputs-{run.id}"
        if any(o.host and o.host.startswith(str(temporary)) for o in run.outputs):
            temporary.mkdir(mode=0o700)  # never one someone else made first
            out.warn(f"the tracker outputs go to {temporary} (the run's directory cannot be written)")
        outputs.make_dirs(run.outputs)
    except OSError as exc:
        out.warn(f"the tracker outputs' directories cannot be made ({exc.strerror or exc}); the job runs all the same")
