"""The run's log: capped by rotation with the cap stated."""

from __future__ import annotations

from runner.runs.logdir import RunLog, read_lines, rotated


def test_the_log_keeps_at_most_its_cap_and_says_so(tmp_path):
    path = tmp_path / "output.log"
    log = RunLog(path, 256 << 10, warn=lambda m: None)  # 128 KiB halves
    line = b"x" * 1023 + b"\n"
    for _ in range(1000):  # ~1 MiB written
        log.add(line)
    log.close()
    assert path.stat().st_size + rotated(path).stat().st_size <= (256 << 10) + 200
    assert path.read_bytes().startswith(b"[primus-runner: earlier output is in output.log.1; at most 0 MiB of output are kept]\n")
    lines, _ = read_lines(path, 2)
    assert lines == [line, line]
