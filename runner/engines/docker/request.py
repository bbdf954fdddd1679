"""A container request in its two named steps: ``make_request`` builds it from the plan alone
(pure, validated), ``resolve`` adds what only the engine and the image can tell, recording
each decision; ``inspect_local`` reads the local image through the client it is handed. The
Engine API client is never imported here: a dry run that needs no answer from the engine
loads no HTTP client at all.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING

from runner.engines.docker import shim
from runner.engines.docker.container import DockerRequest, container_config, labels_for
from runner.errors import RuntimeFailure
from runner.launch_plan import LaunchPlan

if TYPE_CHECKING:
    from runner.clients.engine_api import Engine


def make_request(plan: LaunchPlan, extra_labels: dict[str, str], *, kind: str = "docker",
                 remove: bool = True, detach: bool = False, interactive: bool = False, tty: bool = False,
                 run_id: str | None = None, fetch: str = "pull", engine: str = "auto") -> DockerRequest:
    """The create body for ``plan`` (pure, validated: a bad value raises ``ConfigError``). With
    the shim, the image's entrypoint (which the shim ``exec``s) unless ``--entrypoint`` named one
    and, for a GPU device request, the engine's own fields are left to ``resolve``, named in
    ``pending``. ``interactive``/``tty``: ``-i``/``-t`` (the user's stdin, a terminal). ``run_id``: the run's, its label
    (None: a Slurm node's container, named by its job and rank). ``fetch``: how an image that is not
    local is got, ``pull`` (under the plan's pull policy) or ``build`` (``up --build``). ``engine``:
    ``container.engine``, the engine the launch speaks to."""
    secrets = plan.job.secret_env()
    use_shim = bool(secrets) and plan.container.secrets_via == "stdin"
    own = None if plan.container.entrypoint is None else [plan.container.entrypoint] if plan.container.entrypoint else []  # [] clears the image's
    entrypoint = shim.shim_entrypoint(interactive, tty) + (own or []) if use_shim else own
    secret_env = [] if use_shim or not secrets else shim.env_fallback(secrets)
    labels = labels_for(plan, extra_labels, run_id)
    config = container_config(plan, labels, entrypoint, secret_env, use_shim or interactive, tty=tty)
    config["HostConfig"].pop("DeviceRequests", None)  # the engine's own form: resolve decides it
    pending = (("image entrypoint",) if use_shim and own is None else ()) + (("the engine's GPU request form",) if plan.container.gpu_request else ())
    decisions = [_fetch_decision(plan.container.pull, fetch), f"engine: {kind}"]
    if own is not None:
        decisions.append(f"entrypoint: {plan.container.entrypoint or '(none)'} instead of the image's (--entrypoint)")
    if plan.container.platform:
        decisions.append(f"platform: {plan.container.platform} (--platform; the local image must be that platform, else it is pulled)")
    return DockerRequest(plan, config, use_shim, tuple(sorted(secrets)), labels, kind=kind, remove=remove, detach=detach,
                         interactive=interactive, decisions=tuple(decisions), pending=pending, run_id=run_id, fetch=fetch,
                         engine=engine)


def _fetch_decision(policy: str, fetch: str) -> str:
    """The dry run's line for how the launch gets the image, before it creates the container."""
    if fetch == "build":
        return f"pull: {policy}; image: built from its recipe when it is not local (--build)"
    return f"pull: {policy}; image: " + {"always": "pulled before the container is created",
                                          "never": "used only if it is local"}.get(policy, "pulled when it is not local")


def resolve(request: DockerRequest, eng: Engine | None, image_config: dict | None) -> DockerRequest:
    """The named step between the pure request and the launch: what only the engine (its kind,
    its API version: the GPU request's form) and the image (the entrypoint the shim execs) can
    tell, recorded as decisions. ``eng``/``image_config`` None: not known (a dry run with no
    engine or no local image); it stays pending."""
    config = copy.deepcopy(request.config)
    pending = list(request.pending)
    decisions = list(request.decisions)
    kind = request.kind
    if eng is not None:
        kind = eng.kind
        decisions = [d for d in decisions if not d.startswith("engine:")] + [f"engine: {kind} at {eng.host}, API {eng.api_version}"]
        if request.plan.container.gpu_request and "the engine's GPU request form" in pending:
            from runner.clients.engine_api.types import gpu_host_config

            ids = [g.device_id for g in request.plan.job.gpus] or None  # exactly the chosen GPUs, else all
            config["HostConfig"].update(gpu_host_config(request.plan.container.gpu_request, kind, eng.api_version, device_ids=ids))
            pending.remove("the engine's GPU request form")
            decisions.append(f"GPU request ({request.plan.container.gpu_request}{', devices ' + ','.join(ids) if ids else ''}) in {kind}'s form")
    if image_config is not None and "image entrypoint" in pending:
        image_entrypoint = list((image_config.get("Config") or {}).get("Entrypoint") or [])
        config["Entrypoint"] = list(config["Entrypoint"]) + image_entrypoint  # after the shim make_request chose
        pending.remove("image entrypoint")
        decisions.append(f"the shim execs the image's entrypoint {image_entrypoint or '(none)'} (from the image's inspect)")
    plan = request.plan
    if image_config is not None:
        from runner.runs import cache

        plan, dropped = cache.image_set(plan, list((image_config.get("Config") or {}).get("Env") or []))
        if dropped:  # the image's own ENV places them: the runner's cache does not override it
            config["Env"] = [e for e in config.get("Env") or [] if e.partition("=")[0] not in dropped]
            decisions.append(f"cache variables left to the image's ENV: {', '.join(dropped)}")
    return replace(request, plan=plan, config=config, kind=kind, decisions=tuple(decisions), pending=tuple(pending))


def resolve_unasked(request: DockerRequest, kind: str, host: str, found: str) -> DockerRequest:
    """A dry run's request when nothing pending needs the engine's answer: the engine that
    discovery found answering (``found``: how) names the command; its API version, which
    changes no field of the body, is negotiated at launch."""
    decisions = [d for d in request.decisions if not d.startswith("engine:")]
    decisions.append(f"engine: {kind} at {host} ({found}; its API version is negotiated at launch)")
    return replace(request, kind=kind, decisions=tuple(decisions))


def inspect_local(eng: Engine, image: str) -> dict | None:
    """The local image's inspect data, or None when it is not here (read-only: never pulls)."""
    from runner.clients.engine_api import ApiError

    try:
        return eng.image_config(image)
    except ApiError as exc:
        raise RuntimeFailure(f"cannot inspect image {image}: {exc.message}") from None
