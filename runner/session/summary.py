"""The CI step summary of a run (``$GITHUB_STEP_SUMMARY``): image, forwarded names,
tracker links, exit code. Names only, never values."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping

from runner.ui.ci import github_actions, safe_link

if TYPE_CHECKING:
    from runner.launch_plan import LaunchPlan
    from runner.secrets import Masker


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").replace("`", "'")


def summary_markdown(plan: "LaunchPlan", exit_code: int, links: Mapping[str, str] | None = None) -> str:
    """The run summary: image, forwarded names, tracker links, exit code. Names only, never values."""
    verdict = "succeeded" if exit_code == 0 else "failed"
    forwarded = sorted(plan.job.forwarded, key=lambda d: d.name)
    lines = [
        f"### primus-runner: `{_md(plan.job.name)}` {verdict} (exit code {exit_code})",
        "",
        "| | |",
        "| --- | --- |",
        f"| image | `{_md(plan.container.image)}` |",
        f"| GPU | {_md(plan.job.gpu)} |",
        f"| exit code | {exit_code} |",
        f"| forwarded variables | {', '.join('`' + _md(d.name) + '`' for d in forwarded if not d.secret) or '-'} |",
        f"| forwarded secrets (names) | {', '.join('`' + _md(d.name) + '`' for d in forwarded if d.secret) or '-'} |",
    ]
    skipped = sorted(d.name for d in plan.job.skipped)
    if skipped:
        lines.append(f"| not forwarded | {', '.join('`' + _md(n) + '`' for n in skipped)} |")
    for tracker, link in sorted((links or {}).items()):
        shown = safe_link(link)
        target = f"[{_md(shown)}]({shown})" if shown.startswith(("http://", "https://")) else f"`{_md(shown)}`"
        lines.append(f"| {_md(tracker)} run | {target} |")
    return "\n".join(lines) + "\n\n"


def write_summary(plan: "LaunchPlan", exit_code: int, links: Mapping[str, str] | None = None, masker: "Masker | None" = None) -> bool:
    """Append the run summary to ``$GITHUB_STEP_SUMMARY`` (GitHub Actions); False when there is none."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not github_actions() or not path:
        return False
    text = summary_markdown(plan, exit_code, links)
    if masker is not None:
        text = masker.mask(text)
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError:
        return False
    return True
