"""Human and JSON views of a plan. Secret values render as ``***`` by construction."""

from __future__ import annotations

from runner.launch_plan import LaunchPlan
from runner.secrets import MASK, Masker
from runner.ui import Output


def plan_text(plan: LaunchPlan) -> str:
    rows = [
        ("image", plan.image),
        ("command", " ".join(shell_word(a) for a in plan.command)),
        ("name", plan.name),
        ("gpu", plan.gpu + (f" (device request: {plan.gpu_request})" if plan.gpu_request else "")),
        ("gpus", _gpus_text(plan)),
        ("devices", ", ".join(plan.devices) or "-"),
        ("mounts", ", ".join(str(m) for m in plan.mounts) or "-"),
        ("ipc / network", f"{plan.ipc or '-'} / {plan.network or '-'}"),
        ("privileged", "yes" if plan.privileged else "no"),
        ("caps", ", ".join(plan.cap_add) or "-"),
        ("groups", ", ".join(plan.group_add) or "-"),
        ("resources", f"shm {plan.shm_size or '-'}, memory {plan.memory or '-'}, cpus {plan.cpus or '-'}"),
        ("secrets via", "stdin shim (kept out of docker inspect)" if plan.secrets_via == "stdin" else "container env (visible in docker inspect)"),
        ("trackers", f"{plan.trackers.framework}: {', '.join(plan.trackers.enabled) or 'none enabled'}"),
        ("config files", ", ".join(plan.config_files) or "-"),  # every layer read, lowest first
    ]
    _asked_rows(plan, rows)
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines.append("")
    lines.append("environment (forwarded):")
    for d in plan.forwarded:
        value = MASK if d.secret else d.value
        tag = " [secret]" if d.secret else ""
        lines.append(f"  {d.name}={value}{tag}   <- {d.reason}, {d.source}")
    if plan.skipped:
        lines.append("not forwarded:")
        for d in plan.skipped:
            lines.append(f"  {d.name}   ({d.reason}: {d.skip_reason})")
    lines += override_lines(plan)
    return "\n".join(lines)


RUNNER_SOURCE = "runner"  # a variable the runner itself sets (the job cache, GPUS_PER_NODE …)


def _asked_rows(plan: LaunchPlan, rows: list) -> None:
    """The rows only a flag asks for (--entrypoint, --platform, --label), after the command."""
    own_labels = [f"{k}={v}" for k, v in plan.labels if not k.startswith("io.primus-runner.")]
    for key, value in (("entrypoint", plan.entrypoint), ("platform", plan.platform), ("labels", ", ".join(own_labels) or None)):
        if value is not None:
            rows.insert(2, (key, shell_word(value) if key == "entrypoint" else value))


def compact_text(plan: LaunchPlan, request=None) -> str:
    """``plan``'s short view: what runs, where, with which variables (names) and GPUs."""
    engine = next((d.split(": ", 1)[1] for d in getattr(request, "decisions", ()) if d.startswith("engine: ")), None)
    own = [d.name for d in plan.forwarded if d.source == RUNNER_SOURCE]
    named = [f"{d.name}={MASK if d.secret else d.value}" for d in plan.forwarded if d.source != RUNNER_SOURCE]
    env = ", ".join(named) or "-"
    if own:
        env += f"; and {len(own)} the runner sets ({', '.join(own[:3])}{', …' if len(own) > 3 else ''})"
    rows = [
        ("image", plan.image),
        ("command", " ".join(shell_word(a) for a in plan.command)),
        ("engine", engine or "docker"),
        ("gpus", "none" if plan.gpu == "none" else f"{plan.gpu} {_gpus_text(plan)}"),
        ("env", env),
        ("not set", ", ".join(d.name for d in plan.skipped) or None),
        ("mounts", ", ".join(str(m) for m in plan.mounts) or "-"),
        ("resources", ", ".join(f"{k} {v}" for k, v in (("shm", plan.shm_size), ("memory", plan.memory), ("cpus", plan.cpus)) if v) or None),
        ("trackers", f"{plan.trackers.framework}: {', '.join(plan.trackers.enabled) or 'none enabled'}"),
    ]
    _asked_rows(plan, rows)
    rows = [(k, v) for k, v in rows if v is not None]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines.append("(every setting, where it came from and the full request: primus-runner plan --verbose; for scripts: --json)")
    return "\n".join(lines)


# The plan's settings and the config key each one comes from (for --verbose).
_SETTING_KEYS = (
    ("image", ("container", "options", "image")), ("gpu", ("container", "gpu")), ("name", ("container", "options", "name")),
    ("ipc", ("container", "options", "ipc")), ("network", ("container", "options", "network")),
    ("user", ("container", "options", "user")), ("workdir", ("container", "options", "workdir")),
    ("shm_size", ("container", "options", "shm-size")), ("memory", ("container", "options", "memory")),
    ("cpus", ("container", "options", "cpus")), ("privileged", ("container", "options", "privileged")),
    ("secrets_via", ("container", "secrets_via")),
)


def sources_text(plan: LaunchPlan, config, absent_optional=()) -> str:
    """What ``--verbose`` adds to the plan: the files loaded and where every decision came from."""
    lines = ["", "sources (--verbose):", "  config files, lowest first:"]
    lines += [f"    {f}" for f in plan.config_files] or ["    (none)"]
    where = lambda path: (config.where(path) if config.get(*path) is not None else None) or "not set: generated or the engine's default"  # noqa: E731
    for field_name, path in _SETTING_KEYS:
        value = getattr(plan, field_name)
        if value not in (None, "", ()):
            lines.append(f"  {field_name.replace('_', '-')} = {value}   <- {where(path)}")
    listed = [str(d) for d in (config.get("container", "options", "device") or [])]
    for device in plan.devices:
        origin = where(("container", "options", "device", listed.index(device))) if device in listed else f"--gpu {plan.gpu}"
        lines.append(f"  device {device}   <- {origin}")
    for mount in plan.mounts:
        lines.append(f"  mount {mount}")
    for d in plan.env:
        state = "forwarded" if d.forwarded else f"not forwarded ({d.skip_reason})"
        origin = f"{d.reason}" + (f", value from {d.source}" if d.forwarded and d.source else "") + (f", {d.where}" if d.where else "")
        lines.append(f"  env {d.name}: {state}   <- {origin}")
    if absent_optional:
        lines.append(f"  optional tracker variables not set: {', '.join(absent_optional)}")
    return "\n".join(lines)


def _gpus_text(plan: LaunchPlan) -> str:
    """The chosen GPUs: index, device node (ROCm) or device ID (CUDA), UUID."""
    if plan.gpu == "none":
        return "-"
    if not plan.gpus:
        return f"{plan.gpu_select} (per node, from the Slurm allocation)" if plan.gpu_select != "all" else "all (the flavor's devices)"
    shown = [f"{g.index} ({g.render or 'device ' + g.device_id}, {g.uuid})" for g in plan.gpus]
    return f"{plan.gpu_select}: " + ", ".join(shown)


def override_lines(plan: LaunchPlan) -> list[str]:
    """Each tracker override appended to the Primus command, with the ``file:line`` it comes from."""
    sources = plan.trackers.override_sources
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
    for d in plan.forwarded:
        value = f"[yellow]{MASK}[/yellow] (secret)" if d.secret else escape(str(d.value))
        env.add_row(escape(d.name), value, escape(d.reason), escape(d.source or ""))
    for d in plan.skipped:
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
