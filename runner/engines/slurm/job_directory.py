"""The job directory: where it goes, made 0700 in a place no other user controls, its private files."""

from __future__ import annotations

import os
import re
import stat
from datetime import datetime
from pathlib import Path

from runner.engines.slurm.script import PLAN_FILE
from runner.engines.slurm.settings import SlurmSettings
from runner.errors import ConfigError, Problem, RuntimeFailure
from runner.secrets import Masker


def write_private(path: Path, text: str, masker: Masker) -> None:
    """Write a 0600 file, refusing if a secret value slipped into it (defence in depth)."""
    data = text.encode()
    if masker.contains_secret(data):
        raise ConfigError(Problem(f"refusing to write {path}: it would contain a secret value (is one in the command line?)"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def job_dir_for(settings: SlurmSettings, name: str) -> Path:
    """The job directory a request names: the first free one (read-only; ``make_job_dir`` makes it)."""
    base = Path(settings.output_dir).expanduser() if settings.output_dir else Path.cwd() / "primus-runs"
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    path = (base / f"{stamp}-{safe}").absolute()
    for i in range(1000):
        candidate = path if i == 0 else path.with_name(f"{path.name}-{i}")
        if not candidate.exists():
            return candidate
    raise RuntimeFailure(f"cannot find a free job directory under {base}")


def make_job_dir(path: Path) -> Path:
    """Create exactly the directory the request's script names (0700), in a place no other user controls.

    The node agent reads the plan file from it while the job is queued: another user who
    could replace the directory (a parent they own or may write to) could run their image
    with your secrets. Refused (exit 2) before anything is written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    _refuse_foreign(path.parent)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        if not (path / PLAN_FILE).exists():  # the run's own directory, its tracker outputs already made (runner.runs)
            return path
        raise RuntimeFailure(f"the job directory {path} appeared meanwhile (another submission?)", "submit again") from None
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise ConfigError(Problem(f"the job directory {path} is not a directory of yours with mode 0700"))
    return path


def _refuse_foreign(parent: Path) -> None:
    """A job directory's parent must be yours (or root's), and writable by nobody else unless sticky (/tmp)."""
    st = os.stat(parent)
    mine = st.st_uid in (os.getuid(), 0)
    open_to_others = st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX
    if not mine or open_to_others:
        who = "another user owns it" if not mine else "other users may write to it"
        raise ConfigError(Problem(
            f"the job directory would be inside {parent}, and {who}: they could swap the job's plan while it is queued",
            hint="set slurm.output_dir (or run from) a directory of your own, e.g. chmod go-w it",
        ))
