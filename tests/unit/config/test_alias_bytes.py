"""YAML alias byte amplification: few nodes, each an alias of one big string, is refused by bytes."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

from runner.config.yamlsource import MAX_BYTES, MAX_NODES


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # 2 GiB: the old code died here with MemoryError, exit 3


def test_a_byte_amplifying_alias_bomb_is_refused_with_file_line(work):
    aliases = 95_000
    text = "x-big: &a \"" + "A" * 600_000 + "\"\nx-list: [" + ",".join(["*a"] * aliases) + "]\n"
    assert len(text) < MAX_BYTES and aliases < MAX_NODES  # under the size and node limits: only its bytes are a bomb
    (work / ".primus.yaml").write_text(text)
    result = subprocess.run([sys.executable, "-m", "runner", "plan", "--", "true"], cwd=work, capture_output=True, text=True,
                            env={**os.environ, "HOME": str(work), "NO_COLOR": "1"}, timeout=120, preexec_fn=limit_memory)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "alias bomb" in result.stderr and ".primus.yaml:" in result.stderr
    assert "MemoryError" not in result.stderr

