"""Shared pieces of the runs tests: a job that writes real tracker output, and reading the store."""

from __future__ import annotations

import json
import struct
from pathlib import Path

# A TensorBoard event file as TensorBoard writes it (TFRecord framing with masked CRC32C, one
# Event with file_version), in plain Python: the job images have no tensorboard package.
TB_WRITER = r'''
import os, struct, sys, time
def crc(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF
def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
event = b"\x09" + struct.pack("<d", time.time()) + b"\x1a\x0dbrain.Event:2"
head = struct.pack("<Q", len(event))
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, "events.out.tfevents.%d.rank%s" % (time.time(), os.environ.get("NODE_RANK", "0"))), "wb") as fh:
    fh.write(head + struct.pack("<I", masked(crc(head))) + event + struct.pack("<I", masked(crc(event))))
print("TB written", flush=True)
'''

WANDB_JOB = ("import wandb; run = wandb.init(); wandb.log({'loss': 2.5}); print('RUN', run.id, flush=True); wandb.finish()")


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF


def is_event_file(path: Path) -> bool:
    """The file starts with a TFRecord whose length CRC checks out and holds a TensorBoard Event."""
    data = path.read_bytes()
    length = struct.unpack("<Q", data[:8])[0]
    masked = (((crc32c(data[:8]) >> 15) | (crc32c(data[:8]) << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    return struct.unpack("<I", data[8:12])[0] == masked and b"brain.Event:2" in data[12:12 + length]


def host_path(stderr: str, container_path: str) -> Path:
    """The host path the runner printed for a tracker output."""
    (line,) = [ln for ln in stderr.splitlines() if f"output {container_path} (" in ln and "is on the host at " in ln]
    return Path(line.split("is on the host at ", 1)[1].split(" (", 1)[0])


def sync_path(stderr: str) -> Path:
    (line,) = [ln for ln in stderr.splitlines() if "upload it with: wandb sync " in ln]
    return Path(line.split("wandb sync ", 1)[1].strip())


def runs_json(ws_run, *args) -> list[dict]:
    done = ws_run("--json", "runs", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def state_runs(home: Path) -> Path:
    """The run directories of a runner whose HOME is ``home`` (XDG_STATE_HOME as the environment has it)."""
    import os

    base = os.environ.get("XDG_STATE_HOME", "")
    return (Path(base) if base and os.path.isabs(base) else home / ".local" / "state") / "primus-runner" / "runs"


def slurm_job_dirs(home: Path) -> list[Path]:
    """The job directories of Slurm jobs submitted with HOME=``home`` and slurm.output_dir unset: each run's
    own ``slurm/`` under the state directory (the runner's default since it keeps every run's files there)."""
    root = state_runs(home)
    return sorted(p for p in root.glob("*/slurm") if p.is_dir()) if root.exists() else []


def slurm_job_files(home: Path, pattern: str) -> list[Path]:
    return sorted(f for d in slurm_job_dirs(home) for f in d.glob(pattern))
