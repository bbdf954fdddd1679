"""The CLI's own peak memory, measured from a small fresh parent.

Forking the pytest process itself (``preexec_fn``, ``os.fork``) would count pytest's memory,
hundreds of MiB late in a full run, in the child's ``ru_maxrss``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


# A small, freshly exec'd Python forks the CLI and reports the CLI's own peak RSS. Forking the
# pytest process itself would count pytest's memory (hundreds of MiB late in a full run) too.
_MEASURE = """
import os, resource, sys
pid = os.fork()
if pid == 0:
    try:  # a regression must fail the test, not take the shared machine down
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        os.execv(sys.executable, [sys.executable, "-m", "runner", *sys.argv[2:]])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(str(usage.ru_maxrss * 1024))
rc = os.waitstatus_to_exitcode(status)
sys.exit(128 - rc if rc < 0 else rc)  # a signal as a shell reports it: 139 for SIGSEGV
"""


def measured(project: Path, *args: str, env: dict | None = None, timeout: float = 120) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, the child's own peak RSS in bytes) of ``python -m runner ARGS``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "WANDB", "MLFLOW", "HF_", "NCCL_", "GITHUB_"))}
    base.update({"HOME": str(project), "XDG_CACHE_HOME": str(project / ".cache"), "NO_COLOR": "1"})
    base.update(env or {})
    rss_path = project / ".rss"
    result = subprocess.run([sys.executable, "-c", _MEASURE, str(rss_path), *args], cwd=project, env=base,
                            capture_output=True, timeout=timeout)
    return result.returncode, result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace"), int(rss_path.read_text() or 0)
