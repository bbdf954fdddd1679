"""``cmd:`` references (runner.secrets.refs.cmd, .programs) with real programs: the first
stdout line, no shell, bounded time and output, stderr only masked. pass: and aws-sm: against
real stores are in tests/integration/secrets/test_secret_refs_stores.py."""

from __future__ import annotations

import json
import os

import pytest

from engine_fixtures import assert_no_leak, sha
from runner.errors import ConfigError, EngineUnavailable
from runner.secrets.refs.resolve import check_refs, resolve
from runner.secrets import secret_scope
from secret_ref_helpers import canary, error_text, gone, no_env, ref, script, secret_file


def test_cmd_reference_gives_the_first_stdout_line_exactly(tmp_path):
    value = canary("cmd") + " ünï"
    data = secret_file(tmp_path / "store", value + "\nsecond line is not the secret\n")
    show = script(tmp_path / "show", 'cat "$1"\necho "a note on stderr" >&2\n')
    got = resolve([ref("DATABRICKS_TOKEN", f"cmd:{show} {data}")], no_env)
    assert sha(got["DATABRICKS_TOKEN"].reveal()) == sha(value)


def test_cmd_runs_without_a_shell_and_with_stdin_closed(tmp_path):
    # No shell: `$HOME`, `;` and `|` reach the program as plain arguments.
    record = tmp_path / "argv"
    show = script(tmp_path / "show", f'printf "%s\\n" "$@" > {record}\nread line && echo "stdin: $line" >&2\necho ok-value\n')
    got = resolve([ref("T", f"cmd:{show} '$HOME' ; | x")], no_env)
    assert got["T"].reveal() == "ok-value"
    assert record.read_text().splitlines() == ["$HOME", ";", "|", "x"]


def test_failing_program_is_exit_2_and_its_stdout_is_never_shown(tmp_path):
    value = canary("stdout-of-failure")
    data = secret_file(tmp_path / "store", value + "\n")
    bad = script(tmp_path / "bad", 'cat "$1"\necho "vault: permission denied" >&2\nexit 3\n')
    source = f"cmd:{bad} {data}"
    with pytest.raises(ConfigError) as info:
        resolve([ref("TOKEN", source)], no_env)
    text = error_text(info.value)
    assert f"TOKEN ({source})" in text and "exited with 3" in text and "vault: permission denied" in text
    assert_no_leak(text, {"TOKEN": value}, "a failing program's error")


def test_program_stderr_passes_through_the_callers_masker(tmp_path, monkeypatch):
    # The scope's secret (in the environment, not in the config) and a value resolved in the same
    # call are both printed on stderr by a failing program; neither may reach the error.
    env_value = canary("env-secret")
    file_value = canary("sibling")
    sibling = secret_file(tmp_path / "sibling", file_value + "\n")
    noisy = script(
        tmp_path / "noisy",
        f'echo "debug: token=$WANDB_API_KEY" >&2\necho "debug: other=$(cat {sibling})" >&2\nexit 1\n',
    )
    monkeypatch.setenv("WANDB_API_KEY", env_value)
    scope = secret_scope([{"WANDB_API_KEY": env_value}], lambda name: name == "WANDB_API_KEY")
    refs = [ref("NOISY", f"cmd:{noisy}"), ref("SIBLING", f"file:{sibling}")]
    with pytest.raises(ConfigError) as info:
        resolve(refs, no_env, mask=scope.masker.mask)
    report = check_refs(refs, no_env, 10.0, mask=scope.masker.mask)
    text = error_text(info.value)
    # Leak check first: it names the secret, never the value, when it fails.
    assert_no_leak(text, {"WANDB_API_KEY": env_value, "SIBLING": file_value}, "a failing program's stderr")
    assert "debug: token=***" in text and "debug: other=***" in text
    assert_no_leak(json.dumps(report), {"WANDB_API_KEY": env_value, "SIBLING": file_value}, "check_refs")


def test_program_not_found_is_exit_1_naming_the_reference():
    with pytest.raises(EngineUnavailable) as info:
        resolve([ref("DATABRICKS_TOKEN", "cmd:primus-no-such-program read op://x/y")], no_env)
    assert info.value.exit_code == 1
    assert "DATABRICKS_TOKEN (cmd:primus-no-such-program read op://x/y)" in info.value.message
    assert "program not found" in info.value.message


def test_program_printing_nothing_is_exit_2(tmp_path):
    quiet = script(tmp_path / "quiet", "exit 0\n")
    with pytest.raises(ConfigError) as info:
        resolve([ref("T", f"cmd:{quiet}")], no_env)
    assert "printed nothing" in info.value.message


def test_timeout_is_exit_1_and_kills_the_program_and_its_children(tmp_path):
    hang = script(tmp_path / "hang", f"sleep 300 &\necho $! > {tmp_path}/child\necho $$ > {tmp_path}/self\nwait\n")
    with pytest.raises(EngineUnavailable) as info:
        resolve([ref("SLOW_TOKEN", f"cmd:{hang}")], no_env, timeout=1.0)
    assert "SLOW_TOKEN (cmd:" in info.value.message and "did not answer within 1 s" in info.value.message
    for pidfile in ("self", "child"):
        pid = int((tmp_path / pidfile).read_text())
        assert gone(pid), f"the {pidfile} process {pid} outlived the timeout"


def test_endless_output_is_cut_at_1_mib_exit_2():
    with pytest.raises(ConfigError) as info:
        resolve([ref("T", "cmd:yes a-value")], no_env, timeout=30)
    assert "T (cmd:yes a-value)" in info.value.message and "printed more than 1 MiB" in info.value.message


def test_a_failing_programs_long_stderr_shows_its_last_lines(tmp_path):
    noisy = script(tmp_path / "noisy", "yes noise | head -c 300000 >&2\necho final words >&2\nexit 1\n")
    with pytest.raises(ConfigError) as info:
        resolve([ref("T", f"cmd:{noisy}")], no_env, timeout=30)
    assert info.value.message.endswith("final words")
    assert len(info.value.message) < 1000


def test_a_helper_left_running_does_not_hold_up_the_value(tmp_path):
    # Like gpg-agent or an `op` daemon: a background child keeps stdout open after the
    # program exits. Waiting for EOF would hang until the timeout (exit 1).
    pidfile = tmp_path / "helper"
    starter = script(tmp_path / "starter", f"sleep 300 &\necho $! > {pidfile}\necho the-value\n")
    try:
        got = resolve([ref("T", f"cmd:{starter}")], no_env, timeout=60)
    finally:
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text()), 9)
            except ProcessLookupError:
                pass
    assert got["T"].reveal() == "the-value"


def test_the_program_gets_no_value_in_its_arguments_or_environment(tmp_path):
    value = canary("env-only-in-lookup")
    dump = tmp_path / "dump"
    spy = script(tmp_path / "spy", f"cat /proc/$$/cmdline > {dump}\nenv >> {dump}\necho spy-value\n")
    got = resolve([ref("A", "env:SOURCE"), ref("B", f"cmd:{spy} --flag")], {"SOURCE": value}.get)
    assert got["A"].reveal() == value and got["B"].reveal() == "spy-value"
    assert_no_leak(dump.read_bytes(), {"A": value}, "the cmd: program's arguments and environment")
