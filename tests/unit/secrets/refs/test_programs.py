"""What the program-running stores share: a program's failures told as a store's, its first line the value."""

from __future__ import annotations

import pytest

from runner.secrets.refs.failures import Missing, Unreachable
from runner.secrets.refs.programs import first_line, output


@pytest.mark.parametrize("stdout, value", [(b"tok-1\nsecond\n", "tok-1"), (b"tok-2\r\nx", "tok-2"), (b"  tok 3 ", "  tok 3 ")])
def test_the_value_is_the_first_line_exactly_without_its_line_end(stdout, value):
    assert first_line(stdout) == value


@pytest.mark.parametrize("stdout, says", [(b"", "printed nothing"), (b" \n\n", "printed nothing"),
                                          (b"\xff\xfe\n", "not UTF-8")])
def test_no_output_or_output_that_is_not_text_is_missing(stdout, says):
    with pytest.raises(Missing) as info:
        first_line(stdout)
    assert says in info.value.message and not isinstance(info.value, Unreachable)


def test_a_failing_program_is_missing_with_its_stderr_kept_for_masking():
    with pytest.raises(Missing) as info:
        output(["sh", "-c", "echo out; echo err-text >&2; exit 3"], 10, "lookup")
    assert info.value.message == "lookup exited with 3" and b"err-text" in info.value.stderr
    assert not isinstance(info.value, Unreachable)


def test_a_killed_program_says_its_signal():
    with pytest.raises(Missing) as info:
        output(["sh", "-c", "kill -9 $$"], 10, "lookup")
    assert info.value.message == "lookup killed by signal 9"


def test_a_program_not_installed_or_too_slow_is_unreachable():
    with pytest.raises(Unreachable):
        output(["primus-runner-no-such-program-x"], 10, "lookup")
    with pytest.raises(Unreachable):
        output(["sleep", "5"], 0.2, "lookup")


def test_the_stdout_of_a_program_that_succeeds_is_returned_whole():
    assert output(["printf", "a\\nb"], 10, "lookup") == b"a\nb"
