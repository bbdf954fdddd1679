"""Slurm's controller as the runner meets it: its client tools, whether it answers, and what its
configuration (``scontrol show config``) says about accounting and ``KillWait``."""

from __future__ import annotations

import re
import shutil

from runner.engines.slurm.node import run as _run
from runner.errors import ConfigError, EngineUnavailable, Problem


def tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise EngineUnavailable(f"{name} not found: Slurm's client tools are not installed here", "install slurm-client or load your site's Slurm module")
    return path


# What Slurm's clients print when slurmctld is down or unreachable (not a refusal of the job).
UNREACHABLE = re.compile(r"Unable to contact slurm controller|Socket timed out|Connection refused|Zero Bytes were transmitted")


def check_engine() -> list[str]:
    """Raise ``EngineUnavailable`` when Slurm cannot take a job; return warnings."""
    for name in ("sbatch", "srun", "sinfo", "scontrol"):
        tool(name)
    probe = _run(["sinfo", "-h", "-o", "%P"], timeout=20)
    if probe.returncode != 0:
        raise EngineUnavailable(f"slurmctld does not answer: {probe.stderr.strip()}", "start slurmctld or check SLURM_CONF")
    warnings = []
    config = _run(["scontrol", "show", "config"], timeout=20)
    return warnings + accounting_warnings(config.stdout)


def show_config() -> str:
    """``scontrol show config`` (empty when it does not answer: ``check_engine`` reports that)."""
    try:
        return _run([tool("scontrol"), "show", "config"], timeout=20).stdout
    except EngineUnavailable:
        return ""


def refuse_archived_secrets(show_config_text: str, secret_names: list[str], allowed: bool) -> None:
    """Refuse (exit 2) a job that forwards secrets to a cluster whose accounting stores job
    environments (``AccountingStoreFlags=job_env``): slurmdbd would archive their values,
    readable by the cluster's admins for as long as accounting is kept."""
    flags = re.search(r"^AccountingStoreFlags\s*=\s*(.*)$", show_config_text, re.M)
    if allowed or not secret_names or not flags or "job_env" not in flags.group(1):
        return
    raise ConfigError(Problem(
        f"this cluster's accounting stores job environments (AccountingStoreFlags={flags.group(1).strip()}): "
        f"slurmdbd would archive the values of {', '.join(secret_names)}",
        hint="ask the cluster's admins to drop job_env from AccountingStoreFlags, or accept it for this project "
             "with slurm.allow_env_in_accounting: true",
    ))


def accounting_warnings(show_config: str) -> list[str]:
    """Warn when Slurm keeps batch scripts or job environments (secret values!) in its accounting."""
    warnings = []
    flags = re.search(r"^AccountingStoreFlags\s*=\s*(.*)$", show_config, re.M)
    if flags:
        stored = [f for f in ("job_script", "job_env") if f in flags.group(1)]
        if stored:
            warnings.append(
                f"Slurm stores {' and '.join(stored)} in its accounting (AccountingStoreFlags={flags.group(1).strip()}): "
                "batch scripts hold names only, but job environments (secret values included) are kept in the accounting database"
                if "job_env" in stored
                else f"Slurm stores batch scripts in its accounting (AccountingStoreFlags={flags.group(1).strip()}); the runner's scripts hold names only"
            )
    return warnings


def kill_wait_of(show_config_text: str) -> int | None:
    """Slurm's ``KillWait`` (seconds from SIGTERM to SIGKILL) from ``scontrol show config``."""
    m = re.search(r"^KillWait\s*=\s*(\d+)", show_config_text, re.M)
    return int(m.group(1)) if m else None
