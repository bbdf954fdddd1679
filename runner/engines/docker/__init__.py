"""The Docker engine (Docker and Podman, through one Engine API client).

A ``LaunchPlan`` becomes one container (``container``): created with public env
only and the runner's labels, secrets passed through the stdin shim (``shim``),
output streamed through the masker as it arrives, exit code returned, container
removed; interruption at any moment stops and removes it (``run``). Its verbs
``ps``, ``logs``, ``down`` (``verbs``) and ``exec`` (``exec_into``) act on the
runner's own containers.

The request is final before anything is created: ``request`` builds it from the
plan, ``resolve`` adds what only the engine and the image can tell (a named step,
recorded in the request), ``launch`` sends it as is. The dry run renders it
(``render``: the equivalent ``docker run``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NamedTuple

from runner.engines.base import Connection, EngineBase, Launched, RunContext, delegate
from runner.engines.docker.container import DockerRequest
from runner.engines.docker.request import inspect_local, make_request, resolve, resolve_unasked
from runner.errors import EngineUnavailable
from runner.launch_plan import LaunchPlan

if TYPE_CHECKING:
    from runner.engines.docker.run import Attached


def _shared_client(preference: str | None = None):
    """The one Engine API client, imported on first use: `plan` that needs no answer from the
    engine loads no HTTP client."""
    from runner.clients.engine_api.shared import engine_client

    return engine_client(preference)


class DockerSettings(NamedTuple):
    """The Docker engine's own options, from the config (validated by its schema)."""

    engine: str = "auto"  # container.engine: auto | docker | podman

    @classmethod
    def from_config(cls, config) -> "DockerSettings":
        return cls(engine=str(config.get("container", "engine", default="auto") or "auto"))


def _check_cdi_spec(plan: LaunchPlan) -> None:
    """CUDA on Podman: the CDI devices the request names must be in a spec, else nothing starts."""
    from runner.clients.engine_api.types import gpu_host_config
    from runner.gpus import cdi

    ids = [g.device_id for g in plan.job.gpus] or None
    names = gpu_host_config("nvidia", "podman", device_ids=ids)["DeviceRequests"][0]["DeviceIDs"]
    absent = cdi.missing(names)
    if absent:
        devices = " ".join(f"--device {name}" for name in names)
        raise EngineUnavailable(
            f"CUDA on Podman goes through CDI (the device{'s' if len(names) > 1 else ''} {', '.join(names)}), but no CDI "
            f"spec in {' or '.join(cdi.SPEC_DIRS)} names {', '.join(absent)}: Podman could not start the job",
            hint="generate the spec with `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml` (then "
                 f"`podman run {devices}` works too), or use Docker with nvidia-container-toolkit (container.engine: docker)",
        )


class DockerEngine(EngineBase):
    """One container on the local engine (``up``); also what each Slurm node agent runs."""

    name = "docker"
    local_images = True  # pulls and builds on this host: `check` asks the registry and the builder
    gpu_mode = "host"  # the GPUs are chosen on this host, when the plan is made
    dry_run_lists_unset = True  # its dry run shows the plan, which lists the names not set
    launch_options = ("keep", "build", "interactive", "tty")  # up's flags it honours beyond the plan's (runner.engines.base.Engine)

    refusals = delegate("runner.engines.refusals", "missing_devices")  # a device the daemon would refuse at start, found before anything is created

    def __init__(self, extra_labels: dict[str, str] | None = None):
        self.extra_labels = dict(extra_labels or {})

    @staticmethod
    def settings(config, options) -> DockerSettings:
        return DockerSettings.from_config(config)

    @staticmethod
    def _settings(ctx: RunContext) -> DockerSettings:
        return ctx.settings if isinstance(ctx.settings, DockerSettings) else DockerSettings()

    def preflight(self, plan: LaunchPlan, ctx: RunContext) -> None:
        eng = _shared_client(self._settings(ctx).engine)
        eng.ping()
        if plan.container.gpu_request == "nvidia" and eng.is_podman:
            _check_cdi_spec(plan)

    def claim(self, plan: LaunchPlan, ctx: RunContext) -> LaunchPlan:
        """The GPUs this launch gets, chosen under the host-wide lock and leased until the container's
        label holds them: two launches racing for the same GPUs never both get them. The pipeline
        builds the one request from the plan this returns."""
        if not plan.job.gpus or plan.job.gpu_select == "all":
            return plan
        from runner.gpus import discover, holders, planning
        from runner.gpus.selection import parse

        eng = _shared_client(self._settings(ctx).engine)  # the engine the request is for (container.engine)
        found = discover(plan.job.gpu, plan.job.host_root)
        chosen = holders.claim(parse(plan.job.gpu_select), found, plan.job.gpu, plan.job.name, lambda: holders.container_holders(eng))
        return planning.with_gpus(plan, chosen, plan.job.host_root)

    def request(self, plan: LaunchPlan, ctx: RunContext) -> DockerRequest:
        preference = self._settings(ctx).engine
        return make_request(plan, self.extra_labels, kind="podman" if preference == "podman" else "docker",
                            remove=not ctx.options.keep, detach=ctx.options.detach, interactive=ctx.options.interactive,
                            tty=ctx.options.tty, run_id=ctx.run.id,
                            fetch="build" if ctx.options.build else "pull", engine=preference)

    def resolve(self, request: DockerRequest, ctx: RunContext, dry_run: bool = False) -> DockerRequest:
        """The engine's and the image's facts, before anything is created. A dry run only reads
        (the engine's kind, a local image's inspect) and leaves unknown facts pending; a launch
        first gets the image the pull policy asks for (a pull or ``--build``)."""
        if dry_run:
            return self._resolve_read_only(request, ctx)
        from runner.engines.docker.run import inspect_or_fetch

        eng = _shared_client(request.engine)
        plan = request.plan
        policy = plan.container.pull
        if plan.container.platform:  # checked here for both engines: Podman's compatible create ignores the platform
            from runner.engines.docker.platform import ensure_platform

            image = ensure_platform(plan.container.image, plan.container.platform, policy, lambda: inspect_local(eng, plan.container.image),
                                    lambda: self._pull(ctx, plan.container.image, "missing", present=False, platform=plan.container.platform))
            return resolve(request, eng, image)
        if policy == "always":  # before create, like `docker run --pull always`
            self._pull(ctx, plan.container.image, policy, present=None)
        image = inspect_or_fetch(eng, plan.container.image, self._ensure_image(ctx, request))  # here, never on a create's 404
        return resolve(request, eng, image if request.use_shim else None)

    def _resolve_read_only(self, request: DockerRequest, ctx: RunContext) -> DockerRequest:
        """A dry run's facts. The engine is asked only for what changes the request shown: the
        image's entrypoint (the shim execs it) and a GPU request's form. Without either, the
        socket that answers names the engine and nothing is sent to it (not even a ping: the
        HTTP client is not loaded). No engine answering: the request says what it could not know."""
        preference = self._settings(ctx).engine
        try:
            if not request.pending:
                from runner.clients.engine_api import discovery

                location = discovery.discover(preference)
                kind = discovery.answering_kind(location)
                if kind is not None:
                    return resolve_unasked(request, kind, location.url, location.source)
            eng = _shared_client(preference)
            image = inspect_local(eng, request.plan.container.image) if request.use_shim else None
            return resolve(request, eng, image)
        except EngineUnavailable:
            return request

    def dry_run(self, request: DockerRequest, ctx: RunContext) -> None:
        from runner.ui.render import show_plan

        # `up --dry-run` is `plan --verbose`'s view: the plan, then the request; `plan` alone is its short view.
        show_plan(request.plan, ctx.out, request, config=ctx.config, compact=ctx.options.compact)

    def launch(self, request: DockerRequest, connection: Connection) -> Launched:
        if request.secret_names and not request.use_shim:
            connection.out.warn(
                f"container.secrets_via is 'env': the values of {', '.join(request.secret_names)} go into the container's "
                "environment, visible to anyone who can run `docker inspect` on it (set it to stdin to avoid this)"
            )
        from runner.engines.docker.run import launch

        run = launch(_shared_client(request.engine), request, connection.scope.masker, connection.out)
        return Launched(run.cid, request.plan.job.name, run)

    def _ensure_image(self, ctx: RunContext, request: DockerRequest) -> Callable[[str], None]:
        """What the request says to do when the image is not local: build it, else pull it under the policy."""
        policy, flavor = request.plan.container.pull, request.plan.job.gpu

        def build(image: str) -> None:
            from runner import images

            images.ensure_image(image, ctx.out, flavor=flavor if flavor in ("rocm", "cuda") else None,
                                sources=ctx.options.sources, masker=ctx.scope.masker)

        def pull(image: str) -> None:
            self._pull(ctx, image, "missing" if policy == "always" else policy, present=False)

        return build if request.fetch == "build" else pull

    @staticmethod
    def _pull(ctx: RunContext, image: str, policy: str, present: bool | None, platform: str | None = None) -> None:
        from runner.clients.engine_api.pull import pull_as_needed

        pull_as_needed(_shared_client(), image, policy=policy, lookup=ctx.lookup, out=ctx.out, present=present, platform=platform)

    def announce(self, launched: Launched, ctx: RunContext, detached: bool) -> None:
        if detached:
            self._keep_output(launched.state, ctx)
            ctx.out.result(launched.name)

    @staticmethod
    def _keep_output(run: Attached, ctx: RunContext) -> None:
        """A detached job's output, masked, into its run's log by the keeper (the engine keeps none)."""
        sock, run.sock = run.sock, None
        if ctx.tail.kept_in() is None:
            sock.close()
            ctx.out.warn(f"the output of {run.request.plan.job.name} is not kept: this run has no log (runs.record is false, or "
                         "the state directory cannot be written), and the engine keeps none (it would hold the output unmasked)")
            return
        from runner.engines.docker import keeper

        held = ctx.run.lock_fd
        keeper.start(sock, run.leftover, ctx.scope.masker, ctx.tail, hold=() if held is None else (held,))

    def group_title(self, launched: Launched, request: DockerRequest) -> str:
        return f"job output: {launched.name} ({request.plan.container.image})"

    def watch(self, launched: Launched, ctx: RunContext, on_running: Callable[[], None] | None = None) -> int:
        from runner.engines.docker.run import watch

        run: Attached = launched.state
        return watch(run, ctx.scope.masker, ctx.out, keep=not run.request.remove, tail=ctx.tail, on_running=on_running)

    def audit(self, launched: Launched, ctx: RunContext) -> list:
        from runner.engines.docker.audit import audit_container

        return audit_container(_shared_client(), launched.id, ctx.scope)

    def finished(self, launched: Launched, ctx: RunContext, exit_code: int) -> dict:
        return {}

    def record_started(self, launched: Launched, job_dir) -> dict:
        """A container's record: Docker or Podman, the socket that knows it, its name and id."""
        eng = launched.state.eng
        return {"engine": eng.kind, "engine_host": eng.host, "container": launched.name, "container_id": launched.id}

    @staticmethod
    def check_engine(config) -> dict:
        """``check``: which engine answers (container.engine), where, its version and API version."""
        preference = config.get("container", "engine", default="auto") if config is not None else None
        e = _shared_client(preference).describe()
        return {"engine": e, "notes": [f"engine: {e['engine']} {e.get('version') or ''} at {e['host']} ({e['source']}), API {e['api_version']}"]}

    # The verbs (runner.engines.base.Verbs), on the engine container.engine names.
    ps = delegate("runner.engines.docker.verbs")
    logs = delegate("runner.engines.docker.verbs")
    down = delegate("runner.engines.docker.verbs")
    exec = delegate("runner.engines.docker.exec_into", "verb")
