"""The one runner of a short-lived program (runner.subprocesses): bounded time and output,
the environment given and nothing else, no shell, each failure a RunnerError naming the program."""

from __future__ import annotations

import sys

import pytest

from runner import subprocesses
from runner.errors import EngineUnavailable, RuntimeFailure
from secret_ref_helpers import gone, script


def test_a_program_past_its_time_is_killed_with_its_children_naming_it(tmp_path):
    pid_file = tmp_path / "child"
    hang = script(tmp_path / "slow-tool", f"sleep 300 & echo $! > {pid_file}\nwait\n")
    with pytest.raises(subprocesses.ProgramTimedOut) as info:
        subprocesses.run([str(hang)], timeout=1)
    assert isinstance(info.value, EngineUnavailable)
    assert info.value.message == f"{hang} did not answer within 1 s; killed"
    assert gone(int(pid_file.read_text())), "the program's child outlived the timeout"


def test_output_past_the_bound_is_cut_and_killed_naming_the_program():
    with pytest.raises(subprocesses.OutputTooLarge) as info:
        subprocesses.run(["yes", "x"], timeout=30, max_output=4096, label="yes-probe")
    assert isinstance(info.value, RuntimeFailure)
    assert info.value.message == "yes-probe printed more than 4096 bytes; killed"


def test_stderr_keeps_only_its_last_lines_from_a_line_start():
    lines = 200_000  # ~1.4 MB of stderr, far past what is kept
    code = f"import sys\nfor i in range({lines}): sys.stderr.write(f'line {{i}}\\n')\n"
    done = subprocesses.run([sys.executable, "-c", code], timeout=60)
    assert done.returncode == 0
    assert len(done.stderr) <= 2 * subprocesses.STDERR_KEEP_BYTES
    assert done.stderr.startswith(b"line ") and done.stderr.endswith(f"line {lines - 1}\n".encode())


def test_the_environment_is_exactly_the_one_given():
    done = subprocesses.run(["env"], timeout=30, env={"ONLY": "this"})
    assert done.stdout == b"ONLY=this\n"


def test_stdin_is_fed_the_bytes_given_or_closed():
    assert subprocesses.run(["cat"], timeout=30, stdin=b"fed\n" * 100_000).stdout == b"fed\n" * 100_000
    assert subprocesses.run(["cat"], timeout=30).stdout == b""


def test_no_shell_reads_the_arguments():
    done = subprocesses.run(["echo", "$HOME", ";", "true"], timeout=30)
    assert done.stdout == b"$HOME ; true\n"


def test_a_missing_program_is_exit_1_naming_it():
    with pytest.raises(subprocesses.ProgramNotFound) as info:
        subprocesses.run(["no-such-program-9f3a"], timeout=5)
    assert info.value.exit_code == 1
    assert info.value.message == "no-such-program-9f3a: program not found"
