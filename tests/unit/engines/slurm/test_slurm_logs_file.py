"""``logs JOB`` on a job's output file: all of it, masked with the secret references in scope."""

from __future__ import annotations

import os
import subprocess
import sys

from engine_fixtures import assert_no_leak
from secret_ref_helpers import file_ref_config
from runner.engines.slurm.job_output import RankLines
from runner.secrets import Masker

JOB = "987654321"  # no such job on the cluster: logs reads the runner's job directory


def test_logs_without_follow_reads_everything_and_masks_references(tmp_path):
    secret, config = file_ref_config(tmp_path, "SERVICE_TOKEN", "logs-ref")
    job_dir = tmp_path / "primus-runs" / "job-1"
    job_dir.mkdir(parents=True)
    filler = b"".join(b"0: step %d of a long run\n" % i for i in range(120_000))  # ~3 MB: past one read
    (job_dir / f"slurm-{JOB}.out").write_bytes(filler + f"1: token={secret}\n0: the end\n".encode())
    env = {**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1"}
    result = subprocess.run([sys.executable, "-m", "runner", "--config", str(config), "logs", JOB], cwd=tmp_path, env=env,
                            capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert result.stdout.rstrip().endswith(b"[0] the end"), "logs stopped before the end of the file"
    assert b"[1] token=***" in result.stdout
    assert_no_leak(result.stdout + result.stderr, [secret], "logs output")


def test_a_long_line_in_pieces_is_one_line():
    shown: list[str] = []
    lines = RankLines(Masker(), shown.append, json_lines=False)
    piece = b"x" * (1 << 20)
    lines.feed(b"0: ")
    for _ in range(8):
        lines.feed(piece)
    lines.feed(b"\n1: next")
    lines.close()
    assert shown == ["[0] " + "x" * (8 << 20) + "\n", "[1] next\n"]
