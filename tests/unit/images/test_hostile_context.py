"""A hostile build context is refused (exit 2) before anything reads what cannot be read.

Each case runs ``build --file Dockerfile --context DIR --dry-run`` under a CPU-time and
memory limit (work, not wall-clock): reading /dev/zero or a FIFO would hit them.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest


def limits():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (60, 60))


def hostile(kind: str, context):
    if kind == "symlink to /dev/zero":
        (context / "data.bin").symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(context / "pipe")
    elif kind == "dangling symlink":
        (context / "gone").symlink_to(context / "no-such-file")
    elif kind == "non-UTF-8 .dockerignore":
        (context / ".dockerignore").write_bytes(b"*.log\n\xff\xfe bad\n")


@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "fifo", "dangling symlink", "non-UTF-8 .dockerignore"])
def test_hostile_context_exits_2(work, kind):
    context = work / "ctx"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM busybox\nCOPY . /app\n")
    hostile(kind, context)
    result = subprocess.run([sys.executable, "-m", "runner", "build", "--file", str(context / "Dockerfile"), "--context", str(context),
                             "--tag", "primus-security/hostile:1", "--dry-run"], cwd=work, capture_output=True, text=True,
                            env={**os.environ, "HOME": str(work), "NO_COLOR": "1"}, timeout=120, preexec_fn=limits)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_a_link_to_a_regular_file_is_sent_as_a_link(work):
    from runner.images.context import context_files, recipe_hash

    context = work / "ctx"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM busybox\n")
    (work / "outside.txt").write_text("not sent")
    (context / "link").symlink_to(work / "outside.txt")
    files = context_files(context, "Dockerfile")
    assert "link" in files
    before = recipe_hash(context, files)
    (work / "outside.txt").write_text("changed, still not sent")
    assert recipe_hash(context, files) == before  # the link is hashed, not what it points to
