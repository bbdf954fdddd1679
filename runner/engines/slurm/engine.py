"""The Slurm engine (submit side): one container per node through the node agent (``agent``).

``request`` renders the batch script and the exact ``--export`` names
(``script``, pure); ``launch`` writes them (names only, 0600) and calls
``sbatch``; ``watch`` follows the job's masked output files (``job_wait``).
Containers must not outlive the job: SIGTERM from ``scancel`` reaches the
agent, whose Docker run loop removes the container; when a step is killed
hard the batch script runs a cleanup step on every node, and ``cancel``
removes the job's containers by label after Slurm reports the job gone.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from runner.engines.base import Connection, EngineBase, Launched, RunContext, delegate
from runner.engines.slurm import flags
from runner.engines.slurm.controller import check_engine, kill_wait_of, refuse_archived_secrets, show_config, tool
from runner.engines.slurm.job_directory import job_dir_for, make_job_dir
from runner.engines.slurm.job_output import output_tail
from runner.engines.slurm.job_state import final_exit_code, lost_agents
from runner.engines.slurm.job_wait import wait_for
from runner.engines.slurm.submit import follow_step, link_output, sbatch, start_step
from runner.engines.slurm.script import (COMPUTED, LABEL_NODE_RANK, LABEL_SLURM_JOB, MASK_PREFIX, SlurmRequest, export_names,
                                         node_cache_dir, node_plan, plan_document, render_script)
from runner.engines.slurm.settings import SlurmSettings, settings_from
from runner.errors import Interrupted
from runner.launch_plan import LaunchPlan
from runner.secrets import Secret, SecretScope
from runner.ui.exits import interrupt_means


def embedded_secrets(plan: LaunchPlan, scope: SecretScope) -> list[Secret]:
    """Secrets of the scope that live inside a forwarded secret value without being one
    (``PRIMUS_AUTH="Bearer $HF_TOKEN"`` with HF_TOKEN not forwarded, a URL's password): the
    node agents must mask them on their own, so they travel to the agents (never the container)."""
    forwarded = [d.value.reveal() for d in plan.job.forwarded if isinstance(d.value, Secret)]
    own = set(forwarded)
    found: dict[str, Secret] = {}
    for _, secret in scope.named:
        value = secret.reveal()
        if value and value not in own and any(value in whole for whole in forwarded):
            found.setdefault(value, secret)
    return list(found.values())


def node_command(plan: LaunchPlan) -> list[str]:
    """The container each node's agent starts, as ``docker run …``: the Docker engine's own
    request for this plan with the per-node name and labels (the agent fills in job and rank)."""
    from dataclasses import replace

    from runner.engines.docker.request import make_request

    name = "primus-<job>-<rank>"
    labels = tuple((k, name if k.endswith(".job") else v) for k, v in plan.container.labels)
    node_plan = replace(plan, job=replace(plan.job, name=name), container=replace(plan.container, labels=labels))
    kind = "podman" if plan.container.container_engine == "podman" else "docker"  # the engine each node's agent uses
    return make_request(node_plan, {LABEL_SLURM_JOB: "<job>", LABEL_NODE_RANK: "<rank>"}, kind=kind).argv()


@dataclass(frozen=True)
class SlurmOptions:
    """The Slurm engine's own options: the ``slurm:`` section with the flags on top, checked."""

    settings: SlurmSettings
    allow_env_in_accounting: bool = False
    # `scontrol show config`, read once before the request ("" when Slurm does not answer): the
    # cluster's KillWait and AccountingStoreFlags.
    cluster_config: str = ""

    @property
    def kill_wait(self) -> int | None:
        return kill_wait_of(self.cluster_config)


class SlurmEngine(EngineBase):
    name = "slurm"
    audit_after = True  # audit the job's output files once it has ended
    computed_env = COMPUTED  # per node, by the agent: planned as such, never taken from this host
    gpu_mode = "node"  # each node's agent chooses its GPUs from what Slurm allocated
    # The job runs on other hosts: its files go to a job directory they all see (``job_dir``), each
    # node mounts its own cache, and its output stays in the job's files (the runner keeps no log).
    runs_on_nodes = True
    job_dir_setting = "slurm.output_dir"  # where the user puts the job directory instead
    # Its own command-line flags (submit's, the launcher's slurm srun|sbatch): declared and typed there.
    options = delegate("runner.engines.slurm.flags")
    cli_flags = delegate("runner.engines.slurm.flags")

    @staticmethod
    def settings(config, options) -> SlurmOptions:
        """``ConfigError`` (exit 2) for a refused value, before a tracker run, a file or ``sbatch``."""
        return SlurmOptions(settings_from(config, flags.of(options)),
                            bool(config.get("slurm", "allow_env_in_accounting", default=False)), show_config())

    def preflight(self, plan: LaunchPlan, ctx: RunContext) -> None:
        """Everything that can refuse the job, before a tracker run, a file or ``sbatch``."""
        from runner.clients import registry

        given = flags.of(ctx.options)
        for token in given.args + given.srun_args:  # the user's flags go on sbatch's command line
            if ctx.scope.masker.contains_secret(token.encode("utf-8", "surrogateescape")):
                from runner.errors import ConfigError, Problem

                raise ConfigError(Problem("a Slurm flag holds a secret value: it would be on sbatch's command line (visible in ps)",
                                          hint="pass secrets by name (container.options.env), never as a flag's value"))
        tool("sbatch")
        tool("srun")
        refuse_archived_secrets(ctx.settings.cluster_config, self.travelling_secrets(plan, ctx), ctx.settings.allow_env_in_accounting)
        if plan.container.pull != "never":  # a refused login fails here (exit 2), not on every node after queueing
            cred = registry.credentials_for(plan.container.image, ctx.lookup)
            if cred is not None:
                registry.check_login(cred, 10)

    def travelling_secrets(self, plan: LaunchPlan, ctx: RunContext) -> list[str]:
        """Every secret name whose value rides in the job's environment: the plan's, and the
        registry key the agents pull with (exported to every node whether a pull happens or not)."""
        return sorted(set(plan.job.secret_env()) | {n for n in self._agent_env(ctx) if n == "DOCKER_LOGIN_KEY"})

    def _agent_env(self, ctx: RunContext, plan: LaunchPlan | None = None) -> tuple[str, ...]:
        """Names for the agents only: the registry login they pull with, and the masks they need."""
        from runner.clients.registry import ENV_NAMES

        lookup = ctx.lookup
        masks = tuple(f"{MASK_PREFIX}{i}" for i in range(len(embedded_secrets(plan, ctx.scope)))) if plan else ()
        return tuple(n for n in ENV_NAMES if lookup(n)) + masks

    def _agent_values(self, agent_env: tuple[str, ...], plan: LaunchPlan, ctx: RunContext) -> dict:
        lookup = ctx.lookup
        values = {n: (Secret(lookup(n)) if n == "DOCKER_LOGIN_KEY" else lookup(n)) for n in agent_env if not n.startswith(MASK_PREFIX)}
        values.update((f"{MASK_PREFIX}{i}", secret) for i, secret in enumerate(embedded_secrets(plan, ctx.scope)))
        return values

    def request(self, plan: LaunchPlan, ctx: RunContext) -> SlurmRequest:
        """Everything the job will be given, before anything exists: the plan each node runs (its cache,
        stop timeout, pull), the batch script, the plan file's text, the exact exported names."""
        from runner.trackers.handshake import run_env_names

        settings = ctx.settings.settings
        job_dir = ctx.run.job_dir or job_dir_for(settings, plan.job.name)  # the run's (runner.runs), else the settings'
        cache = ctx.run.node_cache
        node = node_plan(plan, settings, ctx.settings.kill_wait, cache)
        agent_env = self._agent_env(ctx, plan)
        # The names the tracker handshake will set (run ids) are exported from the start: the
        # handshake gives their values by name and the script does not change.
        later = tuple(n for n in run_env_names(plan) if n not in {d.name for d in node.job.forwarded})
        allocation = os.environ.get("SLURM_JOB_ID") or None  # inside one (salloc): the launcher's srun runs a step in it
        as_step = bool(allocation) and settings.cluster.launcher == "srun"
        document = plan_document(node, settings, job_dir, ctx.settings.kill_wait, pull=plan.container.pull,
                                 cache_dir=node_cache_dir(plan, settings, cache), later=later)
        return SlurmRequest(plan, settings, job_dir, render_script(node, settings, job_dir, later, agent_env, as_step=as_step),
                            tuple(export_names(node, later, agent_env)), agent_env=agent_env,
                            node_command=tuple(plan.job.command if settings.cluster.entry == "direct" else node_command(node)),
                            node_cache=cache, allocation=allocation, as_step=as_step, node_plan=node,
                            plan_file=json.dumps(document, indent=2), run_id=ctx.run.id,
                            agent_values=self._agent_values(agent_env, plan, ctx))

    def resolve(self, request: SlurmRequest, ctx: RunContext, dry_run: bool = False) -> SlurmRequest:
        return request  # each node's agent resolves its own container (engine, image) on the node

    @staticmethod
    def _new_job_notice(request: SlurmRequest, ctx: "RunContext | Connection") -> None:
        if request.allocation and not request.as_step:
            ctx.out.notice(f"inside Slurm allocation {request.allocation} (SLURM_JOB_ID is set): this submits a new job, "
                           "with nodes of its own; `primus-runner slurm srun …` runs a step in this allocation")

    def dry_run(self, request: SlurmRequest, ctx: RunContext) -> None:
        self._new_job_notice(request, ctx)
        if ctx.out.json_mode:
            from runner.ui.render import plan_json

            ctx.out.json(plan_json(request.plan, request))
        else:
            ctx.out.result(request.render())

    def launch(self, request: SlurmRequest, connection: Connection) -> Launched:
        make_job_dir(request.job_dir)  # exactly the directory the script names
        if request.as_step:
            step = start_step(request, connection.scope.masker, request.agent_values)
            return Launched(request.allocation, request.plan.job.name, {"request": request, "final": None, "step": step})
        self._new_job_notice(request, connection)
        job_id = sbatch(request, connection.scope.masker, request.agent_values)
        link_output(request, job_id)
        return Launched(job_id, request.plan.job.name, {"request": request, "final": None})

    def announce(self, launched: Launched, ctx: RunContext, detached: bool) -> None:
        request: SlurmRequest = launched.state["request"]
        output = request.job_dir / f"slurm-{launched.id}.out"
        where = f"submitted job {launched.id} on {request.settings.nodes} node(s); output: {output}"
        if request.as_step:
            where = f"running a step in allocation {launched.id} on {request.settings.nodes} node(s); output: {output}"
        if not detached or request.as_step:
            if not ctx.out.json_mode:
                ctx.out.info(where)
            return
        if ctx.out.json_mode:
            ctx.out.json({"job_id": launched.id})
            return
        ctx.out.result(launched.id)
        ctx.out.info(where)
        ctx.out.info(f"follow it: primus-runner logs {launched.id} -f (status {launched.id}); stop it: primus-runner cancel {launched.id}")

    def group_title(self, launched: Launched, request: SlurmRequest) -> str:
        return f"job {launched.id} output: {request.plan.job.name} on {request.settings.nodes} node(s)"

    def watch(self, launched: Launched, ctx: RunContext, on_running=None) -> int:
        request: SlurmRequest = launched.state["request"]
        if request.as_step:
            code = follow_step(launched.state["step"], request, ctx.out)
            ctx.tail.add(output_tail(request.job_dir / f"slurm-{launched.id}.out"))
            return code
        try:
            with interrupt_means(f"stopped following job {launched.id}; it keeps running (primus-runner cancel {launched.id} stops it)"):
                final = wait_for(launched.id, request.job_dir, ctx.out, request.settings.nodes)
        except Interrupted:
            launched.still_running = True  # Ctrl-C stops the following, not the job (nor its tracker run)
            raise
        launched.state["final"] = final
        for message in lost_agents(final, request.job_dir, launched.id):
            ctx.out.error(message)
        ctx.tail.add(output_tail(request.job_dir / f"slurm-{launched.id}.out"))
        return final_exit_code(final, request.job_dir, launched.id)

    def audit(self, launched: Launched, ctx: RunContext) -> list:
        from runner.secrets.scan import audit_paths

        request: SlurmRequest = launched.state["request"]
        paths = [request.job_dir] + ([Path(ctx.options.report)] if ctx.options.report else [])
        findings = audit_paths(paths, ctx.scope)
        if not findings:
            ctx.out.info(f"audit: no secret value in {request.job_dir}")
        return findings

    def finished(self, launched: Launched, ctx: RunContext, exit_code: int) -> dict:
        final = launched.state["final"]
        if launched.state.get("step"):  # the allocation runs on: the step's own end
            return {"job_id": launched.id, "state": "completed" if exit_code == 0 else "failed", "exit_code": exit_code}
        return {"job_id": launched.id, "state": final.state if final else "unknown", "exit_code": exit_code}

    @staticmethod
    def check_engine(config) -> dict:
        """``check --engine slurm``: the cluster's tools and controller answer (warnings: accounting)."""
        return {"warnings": check_engine()}

    # The verbs (runner.engines.base.Verbs): the runner's jobs in Slurm's queue, by job id.
    claims = delegate("runner.engines.slurm.verbs")
    ps = delegate("runner.engines.slurm.verbs")
    logs = delegate("runner.engines.slurm.verbs")
    status = delegate("runner.engines.slurm.verbs")
    cancel = delegate("runner.engines.slurm.verbs")

    # Its runs in the run store (runner.runs): the job's own directory, read back by job id.
    job_dir = delegate("runner.engines.slurm.recorded")
    job_dir_unseen = delegate("runner.engines.slurm.recorded", "unseen")
    record_started = delegate("runner.engines.slurm.recorded", "started")
    record_ended = delegate("runner.engines.slurm.recorded", "ended")
    record_logs = delegate("runner.engines.slurm.recorded", "logs")
