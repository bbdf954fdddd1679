"""``check``: every problem that can be found before launch, listed at once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from runner.errors import ConfigError, EngineUnavailable, Problem
from runner.options import CheckOptions
from runner.ui import Output


@dataclass
class Findings:
    """Everything ``check`` found, gathered step by step, printed once."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    engine_error: str | None = None
    engine: dict = field(default_factory=dict)  # the engine found: kind, host, version, API version
    secrets: list[dict] = field(default_factory=list)  # secret references: found or not, never a value
    online: list[dict] = field(default_factory=list)
    gpus: dict = field(default_factory=dict)  # the flavor's GPUs found, who holds them, how they are passed
    refused: list = field(default_factory=list)  # what up would refuse with its own exit code (RunnerError): the image

    @property
    def ok(self) -> bool:
        return not self.problems and self.engine_error is None and not self.refused

    def exit_code(self) -> int:
        """2 for config problems; else up's own code for what it would refuse; 1 for an engine that does not answer."""
        return 2 if self.problems else self.refused[0].exit_code if self.refused else 1 if self.engine_error else 0


def run_check(opts: CheckOptions, out: Output) -> int:
    from runner.session.prepare import load_sources, prepare, unset_notice

    from runner.engines import engine_named

    found = Findings()
    engine = engine_named(opts.engine)  # the registry's: an unknown name is a usage error (exit 2)
    prepared = None
    computed = tuple(engine.computed_env)  # what the engine sets itself is never "not set"
    try:
        loaded = load_sources(opts.sources, opts.flags)  # once: the references and the plan read the same config
        flags = replace(opts.flags, host_process=True) if getattr(engine, "inherits_env", False) else opts.flags  # as up plans it
        prepared = prepare(out, opts.sources, opts.command or ("true",), flags, quiet=True, loaded=loaded,
                           resolved=_check_refs(opts, loaded, found), extra_env=[(name, "(per node)") for name in computed])
    except ConfigError as exc:
        found.problems += exc.problems
    plan = prepared.planned.plan if prepared is not None else None
    if prepared is not None:
        found.problems += prepared.planned.problems
        found.warnings += prepared.planned.warnings
    if plan is not None:
        found.warnings += list(plan.job.notices)
        if prepared.planned.unset:
            found.warnings.append(unset_notice(prepared.planned.unset))
        if plan.job.gpu != "none" and engine.gpu_mode == "host":  # the GPUs a launch here chooses from
            _check_gpus(plan, found)
        found.problems += engine.refusals(plan, prepared.config)  # what up refuses on this host, as up says it
        if engine.runs_in_container:  # a container's tracker outputs, refused as the launch would refuse them
            from runner.runs.outputs import refusals

            found.problems += refusals(plan, prepared.config)
    _check_engine(engine, prepared, found)
    # An engine that pulls and builds on this host: its registry login and builder are checked
    # here (a plan with problems has no image to ask for).
    if plan is not None and engine.local_images and not prepared.planned.problems:
        asked = found.engine_error is None and _check_image(prepared, opts.online, found)
        _check_registry_and_builder(prepared, found, login=not asked)
    if opts.online and plan is not None:
        _check_online(plan, opts.timeout, found)
    _print(opts, found, out)
    return found.exit_code()


def _check_refs(opts: CheckOptions, loaded: tuple, found: Findings) -> dict:
    """Resolve every ``secrets:`` reference once: the report (found or not, never a value)
    and the values for the plan."""
    from runner.context import early_scope

    env_file, config = loaded
    if not config.get("secrets"):
        return {}
    from runner.secrets.refs.grammar import parse_refs
    from runner.secrets.refs.resolve import resolve_and_report

    refs, problems = parse_refs(config)
    found.problems += problems
    from runner.config.envfile import env_lookup

    values, found.secrets = resolve_and_report(refs, env_lookup(env_file), opts.timeout, mask=early_scope(opts.sources).masker.mask)
    where = {ref.name: ref.where for ref in refs}
    for item in found.secrets:
        if not item["found"]:
            found.problems.append(Problem(f"secret {item['name']} ({item['source']}): {item['error']}", where=where.get(item["name"])))
    return values


def _check_gpus(plan, found: Findings) -> None:
    """The flavor's GPUs on this host (index, node, UUID, PCI address, NUMA node), who holds each,
    and how the runner passes them; no GPU of the flavor at all is a problem."""
    from runner.errors import RunnerError
    from runner.gpus import discover
    from runner.gpus.selection import normal_uuid

    try:
        gpus = discover(plan.job.gpu, plan.job.host_root)
    except ConfigError as exc:  # the same problems the plan met, once each
        found.problems += exc.problems
        return
    except RunnerError as exc:
        found.problems.append(Problem(exc.message, hint=exc.hint))
        return
    where = f" under {plan.job.host_root}" if plan.job.host_root != "/" else ""
    if not gpus:
        source = "/sys/class/kfd/kfd/topology" if plan.job.gpu == "rocm" else "/proc/driver/nvidia/gpus"
        found.problems.append(Problem(
            f"--gpu {plan.job.gpu}: no {plan.job.gpu} GPU on this host (nothing in {source}{where})",
            hint="install the GPU driver, set PRIMUS_RUNNER_HOST_ROOT to where its /sys is, or run with --gpu none / the other flavor",
        ))
        return
    held = _held_now()
    chosen = {g.uuid for g in plan.job.gpus}
    found.gpus = {"flavor": plan.job.gpu, "root": plan.job.host_root, "path": _gpu_path(plan.job.gpu), "found": []}
    found.notes.append(f"{plan.job.gpu} GPUs{where} ({len(gpus)}), passed as {_gpu_path(plan.job.gpu)}:")
    toolkit = _toolkit(plan.job.gpu)
    if toolkit:
        found.notes.append(f"  {toolkit} is installed; the runner passes the GPUs as above all the same (the same isolation, on every engine)")
    for gpu in gpus:
        holder = held.get(normal_uuid(gpu.uuid))
        found.gpus["found"].append({**gpu.to_dict(), "held_by": holder, "chosen": gpu.uuid in chosen})
        found.notes.append(f"  gpu {gpu.describe()}" + (f"  held by {holder}" if holder else "") + ("  [chosen]" if gpu.uuid in chosen else ""))


def _held_now() -> dict[str, str]:
    from runner.errors import EngineUnavailable
    from runner.gpus import holders

    try:
        from runner.clients.engine_api.shared import engine_client

        return holders.current(engine_client())
    except (EngineUnavailable, OSError):
        return holders.current(None)


def _toolkit(flavor: str) -> str | None:
    """A container toolkit or CDI spec on this host, by its files (nothing is run)."""
    import shutil

    vendor = "amd" if flavor == "rocm" else "nvidia"
    specs = [p for d in ("/etc/cdi", "/var/run/cdi") for p in (f"{d}/{vendor}.json", f"{d}/{vendor}.yaml") if os.path.exists(p)]
    if specs:
        return f"a CDI spec ({specs[0]})"
    tool = shutil.which("amd-ctk" if vendor == "amd" else "nvidia-ctk")
    return f"the {'AMD' if vendor == 'amd' else 'NVIDIA'} container toolkit ({tool})" if tool else None


def _gpu_path(flavor: str) -> str:
    """How the runner isolates this flavor's GPUs (the same whether or not a toolkit is installed)."""
    if flavor == "rocm":
        return "--device /dev/kfd + each GPU's render and card nodes (the kernel's device cgroup)"
    return "a device request naming the GPU IDs (Docker: DeviceRequests, needs nvidia-container-toolkit; Podman: CDI nvidia.com/gpu=N)"


def _check_engine(engine, prepared, found: Findings) -> None:
    """Whether the engine answers, as the engine itself says (``check_engine``: which engine,
    where, its version; warnings), or its reason when it does not."""
    try:
        answer = engine.check_engine(prepared.config if prepared else None)
    except EngineUnavailable as exc:
        found.engine_error = f"{exc.message}" + (f" ({exc.hint})" if exc.hint else "")
        return
    if answer is None:  # nothing to ask (runner.engines.base.EngineBase)
        return
    found.engine = answer.get("engine") or {}
    found.notes += answer.get("notes", [])
    found.warnings += answer.get("warnings", [])


def _check_registry_and_builder(prepared, found: Findings, login: bool = True) -> None:
    """The image's registry credential, validated without pulling (``login``: unless the engine asked the
    registry with it already), and the image builder."""
    from runner.errors import RunnerError
    from runner.images import builder_status, planned_builder
    from runner.clients.registry import check_registry

    try:
        if login:
            found.notes.append(check_registry(prepared.plan.container.image, prepared.lookup, timeout=10))
    except RunnerError as exc:
        found.problems.append(Problem(exc.message, hint=exc.hint))
    builder = builder_status(found.engine.get("engine"))  # Podman reports its own builder
    builder["build_uses"] = planned_builder(prepared.config, found.engine.get("engine"))  # build's own decision
    found.engine["builder"] = builder
    found.notes.append(f"builder: {builder['build_uses']}" + (f" (BuildKit needs: {builder['needs']})" if builder.get("needs") else ""))


def _check_image(prepared, online: bool, found: Findings) -> bool:
    """The image as ``up`` would get it: present, or (``online``) pullable; refused with ``up``'s own
    message and exit code (``pull_refusal``). True when the engine asked the registry, with the login."""
    from runner.clients.engine_api.pull import pull_refusal
    from runner.clients.engine_api.shared import engine_client
    from runner.errors import RunnerError

    plan = prepared.plan
    try:
        note, asked = pull_refusal(engine_client(prepared.config.get("container", "engine", default="auto")), plan.container.image,
                            policy=plan.container.pull, lookup=prepared.lookup, online=online)
    except ConfigError as exc:
        found.problems += exc.problems
        return True
    except RunnerError as exc:
        found.refused.append(exc)
        return True
    found.notes.append(note)
    return asked


def _check_online(plan, timeout: float, found: Findings) -> None:
    from runner.trackers import handshake as tracker_runs

    found.online = tracker_runs.online_check(plan, timeout=timeout)
    for item in found.online:
        if not _online_ok(item):
            found.problems.append(Problem(f"{item['tracker']}: {item['status']}: {item['detail']}"))


def _online_ok(item: dict) -> bool:
    return item["status"] in ("reachable", "skipped")


def _unique(problems: list[Problem]) -> list[Problem]:
    """Each problem once, however many steps found it."""
    seen: dict[tuple, Problem] = {}
    for p in problems:
        seen.setdefault((p.message, p.where, p.hint), p)
    return list(seen.values())


def _print(opts: CheckOptions, found: Findings, out: Output) -> None:
    found.problems = _unique(found.problems)
    found.warnings = list(dict.fromkeys(found.warnings))
    if out.json_mode:
        report = {
            "ok": found.ok,
            "problems": [{"message": p.message + (f" ({p.hint})" if p.hint else ""), "where": p.where} for p in found.problems]
                        + [{"message": e.message + (f" ({e.hint})" if e.hint else ""), "where": None} for e in found.refused],
            "warnings": found.warnings,
            "engine": {"name": opts.engine, "reachable": found.engine_error is None, "error": found.engine_error, **found.engine},
        }
        if opts.online:
            report["trackers"] = found.online
        if found.secrets:
            report["secrets"] = found.secrets
        if found.gpus:
            report["gpus"] = found.gpus
        out.json(report)
        return
    from runner.ui import ci

    for warning in found.warnings:
        out.warn(warning)
    if not ci.report_problems(found.problems, out.masker):  # GitHub Actions: file/line annotations
        for problem in found.problems:
            out.error(str(problem))
    for exc in found.refused:
        out.error(exc.message, exc.hint)
    if found.engine_error:
        out.error(found.engine_error)
    for item in found.online:
        if _online_ok(item):  # a failure is already one of the problems above
            out.info(f"{item['tracker']}: {item['status']} - {item['detail']}")
    for item in found.secrets:
        out.info(f"secret {item['name']} ({item['source']}): {'found' if item['found'] else 'NOT FOUND'}")
    for note in found.notes:
        out.info(note)
    out.info(summary_line(found))


def summary_line(found: Findings) -> str:
    """The last line of ``check``: ``check: ok`` or how many problems (the engine counts as one)."""
    count = len(found.problems) + len(found.refused) + (1 if found.engine_error else 0)
    return "check: ok" if not count else f"check: {count} problem{'s' if count != 1 else ''}"
