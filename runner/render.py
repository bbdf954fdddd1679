"""Human and JSON views of a plan. Secret values render as ``***`` by construction."""

from __future__ import annotations

from runner.plan import LaunchPlan
from runner.secrets import MASK
from runner.ui import Output


def plan_text(plan: LaunchPlan) -> str:
    rows = [
        ("image", plan.image),
        ("command", " ".join(_quote(a) for a in plan.command)),
        ("name", plan.name),
        ("gpu", plan.gpu + (f" (device request: {plan.gpu_request})" if plan.gpu_request else "")),
        ("devices", ", ".join(plan.devices) or "-"),
        ("mounts", ", ".join(str(m) for m in plan.mounts) or "-"),
        ("ipc / network", f"{plan.ipc or '-'} / {plan.network or '-'}"),
        ("privileged", "yes" if plan.privileged else "no"),
        ("caps", ", ".join(plan.cap_add) or "-"),
        ("groups", ", ".join(plan.group_add) or "-"),
        ("resources", f"shm {plan.shm_size or '-'}, memory {plan.memory or '-'}, cpus {plan.cpus or '-'}"),
        ("secrets via", "stdin shim (kept out of docker inspect)" if plan.secrets_via == "stdin" else "container env (visible in docker inspect)"),
        ("trackers", f"{plan.trackers.framework}: {', '.join(plan.trackers.enabled) or 'none enabled'}"),
    ]
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
    return "\n".join(lines)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def show_plan(plan: LaunchPlan, out: Output) -> None:
    if out.json_mode:
        out.json(plan.to_dict())
    else:
        out.result(plan_text(plan))
