#!/usr/bin/env python3
"""primus-runner benchmarks: each figure is a ratio against the raw engine, measured in the same run.

    python3 bench/bench.py              # every benchmark
    python3 bench/bench.py cli up_true  # some of them (names without the bench_ prefix)

Benchmarks are not tests: they print figures, they do not assert. Engines they
need (Docker, Slurm) must be running (bash .ci/setup-engines.sh).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUNNER = [sys.executable, "-m", "runner"]
if shutil.which("primus-runner"):
    RUNNER = [shutil.which("primus-runner")]


def timed(cmd: list[str], runs: int, **kwargs) -> list[float]:
    """Wall times (s) of ``runs`` runs of ``cmd``; output discarded; a failing run aborts."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)
        times.append(time.perf_counter() - start)
    return times


def report(name: str, value: float, unit: str, raw: float | None = None, raw_name: str = "raw") -> None:
    line = f"{name}: {value:.1f} {unit}"
    if raw is not None:
        line += f"  ({raw_name} {raw:.1f} {unit}; ratio {value / raw:.2f}x, overhead {value - raw:+.1f} {unit})"
    print(line, flush=True)


def bench_cli() -> None:
    """Issue 2: `--version` and `plan -- true` on the repository's .primus.yaml vs `python -c pass`."""
    runs = 20
    env = dict(os.environ, NO_COLOR="1")
    with tempfile.TemporaryDirectory() as cache:
        env["XDG_CACHE_HOME"] = cache
        subprocess.run(RUNNER + ["plan", "--gpu", "none", "--", "true"], cwd=REPO, env=env, capture_output=True)  # warm the schema cache
        python = statistics.median(timed([sys.executable, "-c", "pass"], runs, env=env)) * 1000
        version = statistics.median(timed(RUNNER + ["--version"], runs, env=env, cwd=REPO)) * 1000
        plan = statistics.median(timed(RUNNER + ["plan", "--", "true"], runs, env=env, cwd=REPO)) * 1000
    report("--version median of 20", version, "ms", python, "python -c pass")
    report("plan -- true median of 20", plan, "ms", python, "python -c pass")


def main(argv: list[str]) -> int:
    benches = {name[len("bench_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("bench_") and callable(fn)}
    chosen = argv or list(benches)
    unknown = [n for n in chosen if n not in benches]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(benches)}", file=sys.stderr)
        return 2
    for name in chosen:
        print(f"== {name}", flush=True)
        try:
            benches[name]()
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"{name}: failed: {exc}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
