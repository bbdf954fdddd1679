"""``file:`` references (runner.secrets.refs.file) with real files: one newline dropped,
files others can read or that are not regular refused (exit 2), never the value."""

from __future__ import annotations

import os

import pytest

from engine_fixtures import assert_no_leak, sha
from runner.errors import ConfigError
from runner.secrets.refs.resolve import resolve
from secret_ref_helpers import canary, error_text, no_env, ref, secret_file


def test_file_reference_strips_exactly_one_trailing_newline(tmp_path):
    value = canary("pem") + "\nsecond line ü\n"  # multi-line, its own last newline kept
    path = secret_file(tmp_path / "mlflow", value + "\n")
    got = resolve([ref("MLFLOW_TRACKING_TOKEN", f"file:{path}")], no_env)
    assert sha(got["MLFLOW_TRACKING_TOKEN"].reveal()) == sha(value)
    crlf = secret_file(tmp_path / "crlf", "abc-crlf-value\r\n")
    assert resolve([ref("C", f"file:{crlf}")], no_env)["C"].reveal() == "abc-crlf-value"
    bare = secret_file(tmp_path / "bare", "no-newline-value")
    assert resolve([ref("B", f"file:{bare}")], no_env)["B"].reveal() == "no-newline-value"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o444])
def test_file_readable_by_group_or_others_is_refused_exit_2_without_the_value(tmp_path, mode):
    value = canary("shared-file")
    path = secret_file(tmp_path / "token", value + "\n", mode)
    with pytest.raises(ConfigError) as info:
        resolve([ref("HF_TOKEN", f"file:{path}")], no_env)
    text = error_text(info.value)
    assert info.value.exit_code == 2
    assert f"HF_TOKEN (file:{path})" in text and "readable by group or others" in text and "chmod 600" in text
    assert_no_leak(text, {"HF_TOKEN": value}, "the refused-file error")


def test_file_that_is_missing_a_directory_or_a_fifo_is_exit_2(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)  # nothing writes it: opening it must not hang
    (tmp_path / "dir").mkdir(mode=0o700)
    refs = [ref("A", f"file:{tmp_path / 'absent'}"), ref("B", f"file:{tmp_path / 'dir'}"), ref("C", f"file:{fifo}")]
    with pytest.raises(ConfigError) as info:
        resolve(refs, no_env, timeout=5)
    assert len(info.value.problems) == 3
    assert "no such file" in info.value.message and "not a regular file" in info.value.message
