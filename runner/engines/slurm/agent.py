"""The node agent: ``srun`` starts it once per node (``python -m runner node-agent PLAN``).

It rebuilds the plan from the plan file (names) and its own environment (values,
which Slurm gave the job from sbatch's stdin, under ``carried`` names), adds ``NNODES``/``NODE_RANK``/
``MASTER_ADDR``/``MASTER_PORT``/``GPUS_PER_NODE``, maps the GPUs Slurm allocated to this
step to this node's devices (containers live in the engine's cgroup, not the job's, so
Slurm's own device limit does not reach them), and runs one container through
the Docker engine (same stdin shim, masking and labels), so the job's output
files only ever receive masked text. Its masker comes from the same
``secret_scope`` as the submitting host's: the forwarded secrets and the
passwords inside URLs of forwarded public values.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import replace
from pathlib import Path

from runner.engines.slurm import computed as node_values
from runner.engines.slurm.node import (LABEL_NODE_RANK, LABEL_SLURM_JOB, MASK_PREFIX, PLAN_DIGEST, PLAN_FORMAT, carried, plan_digest,
                                       planned_engine, require_job_id)
from runner.errors import ConfigError, Problem, RunnerError, UsageError
from runner.launch_plan import LaunchPlan
from runner.secrets import Secret, SecretScope, secret_scope
from runner.ui import Output


def plan_from_document(doc: dict, environ: dict[str, str], extra_secrets: tuple[str, ...] = ()) -> tuple[LaunchPlan, SecretScope, list[str]]:
    """The plan on this node: names from the file, values from the environment.

    Returns (plan, the node's secret scope, names missing from the environment).
    """
    if doc.get("format") != PLAN_FORMAT:
        raise ConfigError(Problem(f"not a primus-runner Slurm plan file (format {doc.get('format')!r})"))
    record = doc["plan"]
    values: dict[str, str | Secret] = {}
    missing = []
    for entry in record["env"]:
        value = environ.get(carried(entry["name"]))
        if value is None:
            missing.append(entry["name"])
        else:
            values[entry["name"]] = Secret(value) if entry["secret"] else value
    plan = LaunchPlan.from_record(record, values)
    scope = secret_scope(
        # URL passwords of every forwarded value: a carried secret (a URL with a password) is masked
        # whole by its own entry, the password alone by this one.
        public=[(d.name, d.value.reveal() if isinstance(d.value, Secret) else d.value) for d in plan.job.forwarded],
        # The agent's own secrets (the registry key it pulls with) are masked too, never given to the container.
        extra=list(plan.job.secret_env().items()) + [(n, Secret(environ[n])) for n in extra_secrets if environ.get(n)],
    )
    return plan, scope, missing


def main(argv: list[str]) -> int:
    """``node-agent PLAN`` or ``node-agent --cleanup JOB [PLAN]``, from ``entry.py``: the two forms the
    batch script and ``cancel`` write (``primus-runner node-agent`` parses the same through the CLI)."""
    from runner.ui import ci
    from runner.ui.exits import run_guarded

    ci.disable()  # runs on Slurm nodes; its output is written to log files
    out = Output(color=False)

    def body() -> int:
        match argv:
            case ["node-agent", "--cleanup", job, *plan_file] if len(plan_file) <= 1:
                return cleanup(job, out, *plan_file)
            case ["node-agent", plan_file] if not plan_file.startswith("-"):
                return run_node(plan_file, out)
        raise UsageError(f"node-agent: unexpected arguments {' '.join(argv[1:]) or '(none)'}",
                         "it is started by the batch script submit writes: node-agent PLAN, or node-agent --cleanup JOB [PLAN]")
    return run_guarded(body, out, bug_hint="report it with the job's output")


def cleanup(job: str, out: Output, plan_file: str | None = None) -> int:
    """``node-agent --cleanup JOB [PLAN]``: remove this Slurm job's containers on this node, on the
    engine the job's plan names (``container.engine``)."""
    from runner.clients.engine_api.shared import engine_client
    from runner.engines.containers import remove_containers

    removed = remove_containers({LABEL_SLURM_JOB: require_job_id(job)}, engine_client(planned_engine(plan_file)))
    if removed:
        out.info(f"node {os.environ.get('SLURMD_NODENAME', socket.gethostname())}: removed {removed} container(s) of job {job}")
    return 0


def run_node(plan_file: str, out: Output) -> int:
    """The node's part of the job: its plan, its container (or host process), its exit file."""
    environ = dict(os.environ)
    job_id = environ.get("SLURM_JOB_ID")
    if not job_id:
        raise UsageError("node-agent runs inside a Slurm job step (started by srun from the batch script)", "use primus-runner submit")
    doc = _read_plan(plan_file, environ)
    plan, scope = _node_plan(doc, environ, out)
    rank = environ.get("SLURM_NODEID", "0")
    exit_file = Path(doc["job_dir"]) / f"exit-{job_id}-{rank}"
    if environ.get("SLURM_RESTART_COUNT", "0") not in ("", "0"):
        # A requeued job runs again: the first run's code is stale, and a container its killed
        # agent left behind would hold the name.
        exit_file.unlink(missing_ok=True)
        from runner.clients.engine_api.shared import engine_client
        from runner.engines.containers import remove_containers

        remove_containers({LABEL_SLURM_JOB: job_id, LABEL_NODE_RANK: rank}, engine_client(plan.container.container_engine))
    plan = _this_node(plan, doc, environ, job_id, rank, out)
    if doc.get("entry") == "direct":  # the launcher's `slurm … -- direct`: the direct launcher on this host
        code = _run_process(plan, scope, out, environ)
    else:
        code = _node_container(plan, scope, doc, environ, out, {LABEL_SLURM_JOB: job_id, LABEL_NODE_RANK: rank})
    _write_exit(exit_file, code)
    return code


def _read_plan(plan_file: str, environ: dict[str, str]) -> dict:
    """The plan file, refused unless it is the one this job was submitted with (its digest)."""
    try:
        text = Path(plan_file).read_text()
    except OSError as exc:
        raise ConfigError(Problem(f"cannot read the plan file {plan_file}: {exc}", hint="the job directory must be on a file system every node sees"))
    if plan_digest(text) != environ.get(PLAN_DIGEST):
        raise ConfigError(Problem(f"the plan file {plan_file} is not the one this job was submitted with; nothing was started",
                                  hint="someone changed the job directory while the job was queued: check who can write to it"))
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(Problem(f"cannot read the plan file {plan_file}: {exc}"))


def _node_plan(doc: dict, environ: dict[str, str], out: Output) -> tuple[LaunchPlan, SecretScope]:
    """The plan with this node's values, and its masker in use; refused when a secret is missing."""
    masks = tuple(sorted(n for n in environ if n.startswith(MASK_PREFIX)))
    plan, scope, missing = plan_from_document(doc, environ, extra_secrets=("DOCKER_LOGIN_KEY", *masks))
    out.use_masker(scope.masker)
    secret_names = {e["name"] for e in doc["plan"]["env"] if e["secret"]}
    lost = [n for n in missing if n in secret_names]
    if lost:
        raise ConfigError(Problem(f"these secrets did not reach node {environ.get('SLURMD_NODENAME', '?')}: {', '.join(lost)}",
                                  hint="Slurm must propagate the --export list and the --export-file entries to the step"))
    if missing:
        out.warn(f"not set on this node, not forwarded: {', '.join(missing)}")
    return plan, scope


def _this_node(plan: LaunchPlan, doc: dict, environ: dict[str, str], job_id: str, rank: str, out: Output) -> LaunchPlan:
    """The node's own facts, and only them: the computed variables (``computed``), the container's
    name and labels from the job id and rank, its job cache directory on this node's disk."""
    values = node_values.values(doc["slurm"], environ, rank)
    if plan.job.trackers.enabled:  # a requeued job logs to the same tracker runs (each tracker's requeue_env)
        from runner.trackers import requeue_env

        values.update(requeue_env(plan.job.trackers.enabled, plan.job.public_env()))
    name = f"primus-{job_id}-{rank}"
    labels = tuple((k, name if k.endswith(".job") else v) for k, v in plan.container.labels)
    plan = replace(plan, job=replace(plan.job.with_env(values, "slurm"), name=name), container=replace(plan.container, labels=labels))
    return _make_cache_dir(plan, doc["cache_dir"], out) if doc.get("cache_dir") else plan


def _node_container(plan: LaunchPlan, scope: SecretScope, doc: dict, environ: dict[str, str], out: Output,
                    labels: dict[str, str]) -> int:
    """This node's GPUs, the image as the pull policy wants it, then the container: its exit code."""
    node = environ.get("SLURMD_NODENAME", "?")
    try:
        plan = _node_gpus(plan, environ, node, out) if doc.get("devices") == "allocation" else plan
    except ConfigError as exc:  # an allocation this node cannot map: nothing starts here
        out.error(f"node {node}: {exc.message}", exc.hint)
        return exc.exit_code
    code = _pull(plan.container.image, doc.get("pull", "missing"), environ, out, plan.container.container_engine)
    return code or _run_container(plan, scope, out, labels)


def _write_exit(exit_file: Path, code: int) -> None:
    try:
        fd = os.open(exit_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{code}\n")
    except OSError:
        pass


def _run_process(plan: LaunchPlan, scope: SecretScope, out: Output, environ: dict[str, str]) -> int:
    """The node's job as a host process (the process engine): the node's environment as the
    plan's direct environment rule has it (``runner.host_env``), masked output."""
    from runner.engines.base import Connection, RunContext
    from runner.engines.process import ProcessEngine, ProcessRequest
    from runner.options import RunOptions

    engine = ProcessEngine()
    ctx = RunContext(RunOptions(command=plan.job.command), scope, out)
    try:
        launched = engine.launch(ProcessRequest.of(plan.job, environ), Connection(ctx.out, ctx.scope))
    except RunnerError as exc:
        out.error(exc.message, exc.hint)
        return exc.exit_code
    return engine.watch(launched, ctx)


def _make_cache_dir(plan: LaunchPlan, directory: str, out: Output) -> LaunchPlan:
    """This node's own job cache directory (``cache.node_dir``), which the plan mounts; when it cannot be
    made, the job runs without the mount (and compiles from scratch)."""
    from runner.runs import cache

    try:
        cache.make_dir(Path(directory))
    except OSError as exc:
        out.warn(f"node {os.environ.get('SLURMD_NODENAME', '?')}: the job cache {directory} cannot be created "
                 f"({exc.strerror or exc}); the job compiles from scratch")
        return replace(plan, container=replace(plan.container, mounts=tuple(m for m in plan.container.mounts if m.source != directory)))
    return plan


def _node_gpus(plan: LaunchPlan, environ: dict[str, str], node: str, out: Output) -> LaunchPlan:
    """The GPUs Slurm gave this step, as this node's devices (containers live in the engine's
    cgroup, not the job's: Slurm's device constraint does not reach them, these devices do)."""
    from runner.gpus import discover, host_root, planning
    from runner.gpus import slurm as gres
    from runner.gpus.model import ROOT_ENV, GpuError

    root = host_root(environ) if environ.get(ROOT_ENV) else plan.job.host_root
    found = discover(plan.job.gpu, root)
    indices = gres.allocated(environ, plan.job.gpu)
    if indices is None:
        if plan.job.gpu_select != "all":
            raise GpuError(f"--gpus {plan.job.gpu_select} asked for GPUs per node, but Slurm allocated none to this step",
                           hint="ask Slurm for them: --gpus-per-node N or --gres gpu:N (the cluster needs GresTypes=gpu)")
        if not found:
            return plan  # a node whose GPUs are not read here: the flavor's default devices
        gpus = found
    else:
        if not found:
            raise GpuError(f"Slurm allocated GPUs {','.join(map(str, indices))}, but no {plan.job.gpu} GPU is found under {root}",
                           hint="set PRIMUS_RUNNER_HOST_ROOT to where this node's sysfs is, or check the driver")
        gpus = gres.node_gpus(indices, found, gres.gres_files(node), node)
    out.info(f"node {node}: GPUs {', '.join(f'{g.index} ({g.render or g.uuid})' for g in gpus)}")
    plan = replace(plan, job=replace(plan.job, gpu_select=",".join(str(g.index) for g in gpus) if indices is not None else "all"))
    return planning.with_gpus(plan, gpus, root)


def _pull(image: str, policy: str, environ: dict, out: Output, engine: str = "auto") -> int:
    """The image on this node as the policy wants it, with the registry login sbatch's stdin
    carried, on the engine the plan names (the process's first client: every later call gets it)."""
    from runner.clients.engine_api.pull import pull_as_needed
    from runner.clients.engine_api.shared import engine_client
    from runner.errors import RunnerError

    try:
        pull_as_needed(engine_client(engine), image, policy=policy, lookup=environ.get, out=out)
    except RunnerError as exc:
        out.error(f"node {environ.get('SLURMD_NODENAME', '?')}: {exc.message}", exc.hint)
        return exc.exit_code
    return 0


def _run_container(plan: LaunchPlan, scope: SecretScope, out: Output, labels: dict[str, str]) -> int:
    """The node's container through the Docker engine: launched and watched like ``up``."""
    from runner.engines.base import Connection, RunContext
    from runner.engines.docker import DockerEngine, DockerSettings
    from runner.errors import Interrupted
    from runner.options import RunOptions
    from runner.ui.exits import exit_code

    engine = DockerEngine(extra_labels=labels)
    ctx = RunContext(RunOptions(command=plan.job.command), scope, out, DockerSettings(engine=plan.container.container_engine))
    try:
        launched = engine.launch(engine.resolve(engine.request(plan, ctx), ctx), Connection(ctx.out, ctx.scope))  # the request, nothing else
    except Interrupted as exc:  # while starting: said here, so the node's other failures keep their "node N:" prefix
        return exit_code(exc, out)
    return engine.watch(launched, ctx)
