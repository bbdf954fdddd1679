"""``primus-runner audit``: look for the secrets in scope where they must never be.

The scan IS the scope's masker (``Masker.matches``: the plain value, base64 at
every alignment, URL and JSON forms, each mapped back to the NAMES that produce
it) in one Aho-Corasick pass, so audit and masking can never disagree about
what a leak is. A finding names the secret and the place; the value is
never printed (and every line still goes through the output masker).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from runner.errors import ConfigError, EngineUnavailable, UsageError
from runner.options import Sources
from runner.launch_plan import LABEL
from runner.secrets import SecretScope
from runner.secrets.scan import CHUNK, Finding, Scanner, audit_paths  # noqa: F401  (the scanner's names, re-exported)

MANAGED = f"{LABEL}=true"  # the runner's containers


def runner_state_dirs() -> list[Path]:
    """Where the runner itself writes: its cache/state dir, and ``./primus-runs`` if present."""
    from runner.runs.paths import state_dir

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    dirs = [base / "primus-runner", state_dir()]  # the job cache, the runs' records and logs
    runs = Path.cwd() / "primus-runs"
    if runs.exists():
        dirs.append(runs)
    return [d for d in dirs if d.exists()]


# ------------------------------------------------------------------ command

def audit_scope(sources: Sources, out) -> SecretScope:
    """Every secret the runner would know now: the host's and the env file's.

    A broken config must not stop an audit (a leak is worse than a typo), so on a
    config error the built-in secret names and patterns are used and the problem
    is a warning.
    """
    from runner.context import early_scope, load_context

    try:
        scope = load_context(sources, out=out).scope  # secret references resolved too
    except ConfigError as exc:
        scope = early_scope(Sources(None, sources.env_file))
        out.use_masker(scope.masker)
        out.warn(f"config problem ({exc.message.splitlines()[0]}); auditing with the built-in secret names and patterns")
    out.use_masker(scope.masker)
    return scope


def cmd_audit(targets: Sequence[str], sources: Sources, out) -> int:
    """``primus-runner audit [TARGET…]``: exit 0 clean, 4 when any secret is found."""
    scope = audit_scope(sources, out)
    if not scope:
        out.warn("no secrets in scope (none of the secret names is set in the environment or the env file); nothing to look for")
    scanner = Scanner(scope)
    findings: list[Finding] = []
    scanned: list[str] = []
    if not targets:
        from runner.clients.engine_api.shared import engine_client
        from runner.engines.docker.audit import audit_container

        try:
            for c in engine_client().containers([MANAGED]):
                cid = c["Id"][:12]
                name = (c.get("Names") or [cid])[0].lstrip("/")
                findings += [Finding(f.secret, f"container {name}: {f.location}") for f in audit_container(engine_client(), cid, scanner)]
                scanned.append(f"container {name}")
        except EngineUnavailable as exc:
            out.warn(f"{exc.message}: containers not audited")
        paths = runner_state_dirs()
        findings += audit_paths(paths, scanner)
        scanned += [str(p) for p in paths]
    problems: list[str] = []
    for target in targets:
        if os.path.lexists(target) or _names_a_path(target):
            findings += audit_paths([target], scanner, problems)
        else:
            findings += _audit_engine_object(target, scanner)
        scanned.append(target)

    findings = list(dict.fromkeys(findings))  # drop exact duplicates, keep order
    clean = not findings and not problems
    if out.json_mode:
        report = {"clean": clean, "findings": [f.to_dict() for f in findings], "scanned": scanned, "secrets": scope.names()}
        out.json({**report, "errors": problems} if problems else report)
    else:
        for finding in findings:
            out.result(str(finding))
    for problem in problems:
        out.error(f"not audited: {problem}")
    if problems and not findings:
        out.error(f"{len(problems)} target(s) could not be read: the audit is not clean",
                  "give paths audit can read (run it as a user who can), or leave those out")
        return 2
    if clean:
        out.info(f"clean: {len(scope.names())} secret(s) in scope, none found in {len(scanned)} target(s)")
        return 0
    leaked = sorted({f.secret for f in findings})
    out.error(
        f"{len(findings)} leak(s) of {', '.join(leaked)}",
        "remove them (docker rm / delete the files) and rotate the leaked secrets",
    )
    return 4


def _names_a_path(target: str) -> bool:
    """``./missing``, ``/x``, ``~/y``: a path even when nothing is there (never a container or image)."""
    return target in (".", "..") or target.startswith(("/", "./", "../", "~"))


def _audit_engine_object(target: str, scanner: Scanner) -> list[Finding]:
    from urllib.parse import quote

    from runner.clients.engine_api import ApiError
    from runner.clients.engine_api.shared import engine_client

    from runner.engines.docker.audit import audit_inspected

    try:
        info = engine_client().request("GET", f"/containers/{quote(target, safe='')}/json")
        name = info.get("Name", target).lstrip("/")
        return [Finding(f.secret, f"container {name}: {f.location}") for f in audit_inspected(engine_client(), info, scanner)]
    except ApiError as exc:
        if exc.status != 404:
            raise UsageError(f"cannot inspect {target}: {exc.message}") from None
    from runner.images.scan import audit_image

    try:
        return [Finding(f.secret, f"image {target}: {f.location}") for f in audit_image(engine_client(), target, scanner)]
    except ApiError as exc:
        if exc.status == 404:
            raise UsageError(
                f"'{target}' is not a file, directory, container or image",
                hint="give a path, a container name/id (primus-runner ps) or an image name",
            ) from None
        raise UsageError(f"cannot inspect {target}: {exc.message}") from None
