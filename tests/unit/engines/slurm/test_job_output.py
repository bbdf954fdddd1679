"""runner.engines.slurm.job_output: the job's output rank by rank, masked; ``logs JOB`` on a job's output file,
all of it, masked with the secret references in scope."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from engine_fixtures import assert_no_leak
from secret_ref_helpers import file_ref_config
from runner.engines.slurm import job_output
from runner.engines.slurm.job_output import RankLines
from runner.secrets import Masker

CANARY = "canary-slurm-output-6b1d09e4"
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


def test_ranked_lines_text_json_filter_and_mask():
    shown: list[str] = []
    lines = job_output.RankLines(Masker([CANARY]), shown.append, json_lines=False)
    lines.feed(b"0: step 1\n 1: step")  # srun pads the label to the widest rank
    lines.feed(f" 1\n12: key {CANARY}\nbatch script line\n1: partial".encode())
    lines.close()
    assert shown == ["[0] step 1\n", "[1] step 1\n", "[12] key ***\n", "[job] batch script line\n", "[1] partial\n"]
    docs: list[str] = []
    only = job_output.RankLines(Masker([CANARY]), docs.append, json_lines=True, rank=1, nodes=["n1", "n2"])
    only.feed(f"0: a\n1: b {CANARY}\n".encode())
    assert [json.loads(d) for d in docs] == [{"rank": 1, "node": "n2", "line": "b ***"}]


def test_tail_keeps_the_last_lines_of_the_selected_rank(tmp_path):
    path = tmp_path / "slurm-1.out"
    path.write_bytes(b"".join(f"{i % 2}: line {i}\n".encode() for i in range(10)) + b"1: still writ")
    shown: list[str] = []
    lines = job_output.RankLines(Masker([]), shown.append, json_lines=False, rank=1)
    position = job_output._tail(path, lines, 2)
    assert shown == ["[1] line 7\n", "[1] line 9\n"] and position == path.stat().st_size
    lines.close()
    assert shown[-1] == "[1] still writ\n"
