"""Human and JSON views of a plan. Secret values render as ``***`` by construction."""

from __future__ import annotations

from runner.launch_plan import LaunchPlan
from runner.secrets import MASK, Masker
from runner.ui import Output


def plan_text(plan: LaunchPlan) -> str:
    job, container = plan.job, plan.container
    rows = [
        ("image", container.image),
        ("command", " ".join(shell_word(a) for a in job.command)),
        ("name", job.name),
        ("gpu", job.gpu + (f" (device request: {container.gpu_request})" if container.gpu_request else "")),
        ("gpus", _gpus_text(plan)),
        ("devices", ", ".join(container.devices) or "-"),
        ("mounts", ", ".join(str(m) for m in container.mounts) or "-"),
        ("ipc / network", f"{container.ipc or '-'} / {container.network or '-'}"),
        ("privileged", "yes" if container.privileged else "no"),
        ("caps", ", ".join(container.cap_add) or "-"),
        ("groups", ", ".join(container.group_add) or "-"),
        ("resources", f"shm {container.shm_size or '-'}, memory {container.memory or '-'}, cpus {container.cpus or '-'}"),
        ("secrets via", "stdin shim (kept out of docker inspect)" if container.secrets_via == "stdin" else "container env (visible in docker inspect)"),
        ("trackers", f"{job.trackers.framework}: {', '.join(job.trackers.enabled) or 'none enabled'}"),
        ("config files", ", ".join(job.config_files) or "-"),  # every layer read, lowest first
    ]
    _asked_rows(plan, rows)
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines.append("")
    lines.append("environment (forwarded):")
    for d in plan.job.forwarded:
        value = MASK if d.secret else d.value
        tag = " [secret]" if d.secret else ""
        lines.append(f"  {d.name}={value}{tag}   <- {d.reason}, {d.source}")
    if plan.job.skipped:
        lines.append("not forwarded:")
        for d in plan.job.skipped:
            lines.append(f"  {d.name}   ({d.reason}: {d.skip_reason})")
    lines += override_lines(plan)
    return "\n".join(lines)


RUNNER_SOURCE = "runner"  # a variable the runner itself sets (the job cache, GPUS_PER_NODE …)


def _asked_rows(plan: LaunchPlan, rows: list) -> None:
    """The rows only a flag asks for (--entrypoint, --platform, --label), after the command."""
    own_labels = [f"{k}={v}" for k, v in plan.container.labels if not k.startswith("io.primus-runner.")]
    for key, value in (("entrypoint", plan.container.entrypoint), ("platform", plan.container.platform), ("labels", ", ".join(own_labels) or None)):
        if value is not None:
            rows.insert(2, (key, shell_word(value) if key == "entrypoint" else value))


def compact_text(plan: LaunchPlan, request=None) -> str:
    """``plan``'s short view: what runs, where, with which variables (names) and GPUs; ``request``:
    the container engine's (its decisions name the engine), or None."""
    decisions = request.decisions if request is not None else ()
    engine = next((d.split(": ", 1)[1] for d in decisions if d.startswith("engine: ")), None)
    own = [d.name for d in plan.job.forwarded if d.source == RUNNER_SOURCE]
    named = [f"{d.name}={MASK if d.secret else d.value}" for d in plan.job.forwarded if d.source != RUNNER_SOURCE]
    env = ", ".join(named) or "-"
    if own:
        env += f"; and {len(own)} the runner sets ({', '.join(own[:3])}{', …' if len(own) > 3 else ''})"
    rows = [
        ("image", plan.container.image),
        ("command", " ".join(shell_word(a) for a in plan.job.command)),
        ("engine", engine or "docker"),
        ("gpus", "none" if plan.job.gpu == "none" else f"{plan.job.gpu} {_gpus_text(plan)}"),
        ("env", env),
        ("not set", ", ".join(d.name for d in plan.job.skipped) or None),
        ("mounts", ", ".join(str(m) for m in plan.container.mounts) or "-"),
        ("resources", ", ".join(f"{k} {v}" for k, v in (("shm", plan.container.shm_size), ("memory", plan.container.memory), ("cpus", plan.container.cpus)) if v) or None),
        ("trackers", f"{plan.job.trackers.framework}: {', '.join(plan.job.trackers.enabled) or 'none enabled'}"),
    ]
    _asked_rows(plan, rows)
    rows = [(k, v) for k, v in rows if v is not None]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines.append("(every setting, where it came from and the full request: primus-runner plan --verbose; for scripts: --json)")
    return "\n".join(lines)


# The plan's settings (the spec that holds each: ``job`` or ``container``) and the config key each one
# comes from (for --verbose).
_SETTING_KEYS = (
    ("container", "image", ("container", "options", "image")), ("job", "gpu", ("container", "gpu")),
    ("job", "name", ("container", "options", "name")),
    ("container", "ipc", ("container", "options", "ipc")), ("container", "network", ("container", "options", "network")),
    ("container", "user", ("container", "options", "user")), ("job", "workdir", ("container", "options", "workdir")),
    ("container", "shm_size", ("container", "options", "shm-size")), ("container", "memory", ("container", "options", "memory")),
    ("container", "cpus", ("container", "options", "cpus")), ("container", "privileged", ("container", "options", "privileged")),
    ("container", "secrets_via", ("container", "secrets_via")),
)


def sources_text(plan: LaunchPlan, config, absent_optional=()) -> str:
    """What ``--verbose`` adds to the plan: the files loaded and where every decision came from."""
    lines = ["", "sources (--verbose):", "  config files, lowest first:"]
    lines += [f"    {f}" for f in plan.job.config_files] or ["    (none)"]
    where = lambda path: (config.where(path) if config.get(*path) is not None else None) or "not set: generated or the engine's default"  # noqa: E731
    for spec, field_name, path in _SETTING_KEYS:
        value = getattr(getattr(plan, spec), field_name)
        if value not in (None, "", ()):
            lines.append(f"  {field_name.replace('_', '-')} = {value}   <- {where(path)}")
    listed = [str(d) for d in (config.get("container", "options", "device") or [])]
    for device in plan.container.devices:
        origin = where(("container", "options", "device", listed.index(device))) if device in listed else f"--gpu {plan.job.gpu}"
        lines.append(f"  device {device}   <- {origin}")
    for mount in plan.container.mounts:
        lines.append(f"  mount {mount}")
    for d in plan.job.env:
        state = "forwarded" if d.forwarded else f"not forwarded ({d.skip_reason})"
        origin = f"{d.reason}" + (f", value from {d.source}" if d.forwarded and d.source else "") + (f", {d.where}" if d.where else "")
        lines.append(f"  env {d.name}: {state}   <- {origin}")
    if absent_optional:
        lines.append(f"  optional tracker variables not set: {', '.join(absent_optional)}")
    return "\n".join(lines)


def _gpus_text(plan: LaunchPlan) -> str:
    """The chosen GPUs: index, device node (ROCm) or device ID (CUDA), UUID."""
    if plan.job.gpu == "none":
        return "-"
    if not plan.job.gpus:
        return f"{plan.job.gpu_select} (per node, from the Slurm allocation)" if plan.job.gpu_select != "all" else "all (the flavor's devices)"
    shown = [f"{g.index} ({g.render or 'device ' + g.device_id}, {g.uuid})" for g in plan.job.gpus]
    return f"{plan.job.gpu_select}: " + ", ".join(shown)


def override_lines(plan: LaunchPlan) -> list[str]:
    """Each tracker override appended to the Primus command, with the ``file:line`` it comes from."""
    sources = plan.job.trackers.override_sources
    if not sources:
        return []
    return ["tracker overrides (appended to the Primus command; they beat the experiment YAML):",
            *(f"  {token}   <- {where}" for token, where in sources)]


def shell_word(arg: str) -> str:
    """``arg`` as a shell reads it, quoted for a person: ``"--x='/tmp/tb'"``, not ``'--x='"'"'/tmp/tb'"'"''``."""
    import shlex

    quoted = shlex.quote(arg)
    if quoted != arg and "'" in arg and not any(c in arg for c in '"$`\\!'):
        return f'"{arg}"'
    return quoted


def plan_tables(plan: LaunchPlan, masker: Masker | None = None):
    """The plan as rich tables, for a terminal. Secret values are ``***``; every other
    cell is masked before the table wraps or cuts it (a cut secret is not found after)."""
    from rich.markup import escape as _escape
    from rich.table import Table

    mask = masker.mask if masker is not None else (lambda text: text)

    def escape(text: str) -> str:
        return _escape(mask(text))

    summary = Table(show_header=False, box=None, pad_edge=False)
    summary.add_column(style="bold")
    summary.add_column()
    for line in plan_text(plan).split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition("  ")
        summary.add_row(escape(key.strip()), escape(value.strip()))
    env = Table(title="environment", title_justify="left")
    for column in ("name", "value", "why", "source"):
        env.add_column(column)
    for d in plan.job.forwarded:
        value = f"[yellow]{MASK}[/yellow] (secret)" if d.secret else escape(str(d.value))
        env.add_row(escape(d.name), value, escape(d.reason), escape(d.source or ""))
    for d in plan.job.skipped:
        env.add_row(f"[dim]{escape(d.name)}[/dim]", "[dim]not forwarded[/dim]", escape(d.reason), escape(d.skip_reason or ""))
    return summary, env


def plan_json(plan: LaunchPlan, request=None) -> dict:
    """``plan --json`` (and a dry run's): the plan's keys, and the engine's request under ``request``."""
    doc = plan.to_dict()
    if request is not None:
        doc["request"] = request.to_dict()
    return doc


def show_plan(plan: LaunchPlan, out: Output, request=None, config=None, compact: bool = False) -> None:
    """JSON with ``--json``; ``compact`` (``plan``) without ``--verbose``: about a screen, what runs
    where with which variables and GPUs. Else rich tables on a terminal, plain text for pipes (fast,
    stable to grep); with the engine's ``request``, its rendering follows the plan (what the engine
    is sent); with ``--verbose`` and the ``config``, where every decision came from, last."""
    if out.json_mode:
        out.json(plan_json(plan, request))
        return
    if compact and not out.verbose:
        out.result(compact_text(plan, request))
        return
    _show_plan_text(plan, out)
    if request is not None:
        out.result("")
        out.result(request.render())
    if out.verbose and config is not None:
        out.result(sources_text(plan, config).lstrip("\n"))


def _show_plan_text(plan: LaunchPlan, out: Output) -> None:
    import sys

    if out.color and sys.stdout.isatty():
        import io
        import shutil

        from rich.console import Console

        # Rendered to text first so it passes through the masker like everything printed.
        buffer = io.StringIO()
        console = Console(file=buffer, force_terminal=True, width=shutil.get_terminal_size().columns, highlight=False)
        for table in plan_tables(plan, out.masker):
            console.print(table)
        for line in override_lines(plan):
            console.print(line, markup=False)
        out.result(buffer.getvalue().rstrip("\n"))
    else:
        out.result(plan_text(plan))
