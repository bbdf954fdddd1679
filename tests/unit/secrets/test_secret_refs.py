"""Secret references (runner.secrets.refs): parsing with file:line, and the env:, file:
and cmd: sources with real files and real programs. pass: and aws-sm: against real
stores are in tests/integration/secrets/test_secret_refs_stores.py.

Every value is a fresh canary; errors and reports are checked for it (and its
encodings) with engines.assert_no_leak. No wall-clock asserts: parallelism is shown
by a barrier the programs can only pass together.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from engine_fixtures import assert_no_leak, sha
from runner.config import load_config
from runner.errors import ConfigError, EngineUnavailable
from runner.secrets.refs import SecretRef, check_refs, parse_ref, parse_refs, resolve
from runner.secrets import Secret, secret_scope
from secret_ref_helpers import canary, error_text, no_env, ref, script, secret_file


# ---------------------------------------------------------------- parsing


def test_parse_refs_reads_every_source_with_file_and_line(work):
    (work / ".primus.yaml").write_text(
        "secrets:\n"
        "  HF_TOKEN: pass:ml/hf\n"
        "  WANDB_API_KEY: aws-sm:prod/wandb#api_key\n"
        "  DATABRICKS_TOKEN: cmd:op read op://ml/databricks/token\n"
        "  MLFLOW_TRACKING_TOKEN: file:/run/secrets/mlflow\n"
        "  GH_TOKEN: env:GITHUB_TOKEN\n"
    )
    refs, problems = parse_refs(load_config())
    assert problems == []
    got = {r.name: (r.scheme, r.target, r.source) for r in refs}
    assert got == {
        "HF_TOKEN": ("pass", "ml/hf", "pass:ml/hf"),
        "WANDB_API_KEY": ("aws-sm", "prod/wandb#api_key", "aws-sm:prod/wandb#api_key"),
        "DATABRICKS_TOKEN": ("cmd", "op read op://ml/databricks/token", "cmd:op read op://ml/databricks/token"),
        "MLFLOW_TRACKING_TOKEN": ("file", "/run/secrets/mlflow", "file:/run/secrets/mlflow"),
        "GH_TOKEN": ("env", "GITHUB_TOKEN", "env:GITHUB_TOKEN"),
    }
    where = {r.name: r.where for r in refs}
    assert where["HF_TOKEN"].endswith(".primus.yaml:2")
    assert where["GH_TOKEN"].endswith(".primus.yaml:6")


def test_no_secrets_section_is_no_refs(work):
    assert parse_refs(load_config()) == ([], [])


@pytest.mark.parametrize(
    "yaml_value",
    [
        "{value}",  # the token itself pasted where its reference belongs
        "'Bearer {value}'",
        "'file {value}'",  # no colon after a known scheme
        "'vault:{value}'",  # an unknown scheme
    ],
)
def test_a_value_that_is_not_a_reference_is_refused_and_never_echoed(work, yaml_value):
    value = canary("literal")
    (work / ".primus.yaml").write_text("secrets:\n  HF_TOKEN: " + yaml_value.format(value=value) + "\n")
    config = load_config()  # the schema leaves values to parse_refs: its error would quote the value
    refs, problems = parse_refs(config)
    assert refs == []
    assert len(problems) == 1
    assert problems[0].where.endswith(".primus.yaml:2")
    text = str(problems[0])
    assert "HF_TOKEN" in text and "not a secret reference" in text
    assert_no_leak(text, {"HF_TOKEN": value}, "the problem for a literal in secrets:")


def test_a_non_string_value_or_section_is_refused_without_echo(work):
    (work / ".primus.yaml").write_text("secrets:\n  PIN: 7391827364519283\n")
    _, problems = parse_refs(load_config())
    assert len(problems) == 1 and "7391827364519283" not in str(problems[0])
    value = canary("section")
    (work / ".primus.yaml").write_text(f"secrets: {value}\n")
    _, problems = parse_refs(load_config())
    assert len(problems) == 1 and problems[0].where.endswith(".primus.yaml:1")
    assert_no_leak(str(problems[0]), {"secrets": value}, "the problem for a literal secrets: section")


def test_an_invalid_variable_name_is_a_problem_with_its_line(work):
    (work / ".primus.yaml").write_text("secrets:\n  OK_NAME: env:X\n  1BAD: env:Y\n  'A-B': env:Z\n")
    refs, problems = parse_refs(load_config())
    assert [r.name for r in refs] == ["OK_NAME"]
    assert [p.where.rsplit("/", 1)[1] for p in problems] == [".primus.yaml:3", ".primus.yaml:4"]
    assert "'1BAD' is not a variable name" in str(problems[0]) and "'A-B'" in str(problems[1])


@pytest.mark.parametrize(
    "source, says",
    [
        ("env:not a name", "not a variable name"),
        ("env:", "nothing after"),
        ("file:relative/path", "absolute"),
        ("aws-sm:#key", "no secret id"),
        ("aws-sm:prod/wandb#", "no JSON key"),
        ("cmd:op read 'unclosed", "cannot split"),
        ("cmd:   ", "nothing after"),
    ],
)
def test_invalid_references_name_the_reference_and_the_fix(source, says):
    problem = parse_ref("TOKEN", source, "f:7")
    assert not isinstance(problem, SecretRef)
    assert says in str(problem) and source in str(problem) and problem.where == "f:7"


def test_file_reference_accepts_a_home_relative_path(work):
    value = canary("home-file")
    secret_file(work / "token", value + "\n")
    assert resolve([ref("T", "file:~/token")], no_env)["T"].reveal() == value


# ---------------------------------------------------------------- env:


def test_env_reference_reads_the_other_variable_exactly():
    value = canary("env") + " with spaces, ünïcode and = signs"
    lookup = {"GITHUB_TOKEN": value}.get
    got = resolve([ref("GH_TOKEN", "env:GITHUB_TOKEN")], lookup)
    assert set(got) == {"GH_TOKEN"} and isinstance(got["GH_TOKEN"], Secret)
    assert sha(got["GH_TOKEN"].reveal()) == sha(value)


def test_env_reference_accepts_a_lookup_that_returns_secrets():
    value = canary("env-secret")
    got = resolve([ref("A", "env:B")], {"B": Secret(value)}.get)
    assert got["A"].reveal() == value


def test_unset_or_empty_env_reference_is_exit_2_naming_the_reference():
    with pytest.raises(ConfigError) as info:
        resolve([ref("GH_TOKEN", "env:GITHUB_TOKEN"), ref("X", "env:EMPTY")], {"EMPTY": ""}.get)
    assert info.value.exit_code == 2
    assert len(info.value.problems) == 2
    assert "GH_TOKEN (env:GITHUB_TOKEN)" in info.value.message and "X (env:EMPTY)" in info.value.message


# ---------------------------------------------------------------- file:


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


def test_a_value_with_a_nul_byte_is_exit_2(tmp_path):
    path = tmp_path / "nul"
    path.write_bytes(b"abc\x00def\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError) as info:
        resolve([ref("T", f"file:{path}")], no_env)
    assert "NUL byte" in info.value.message


def test_resolution_is_never_cached(tmp_path):
    path = secret_file(tmp_path / "token", "first-value-123\n")
    refs = [ref("T", f"file:{path}")]
    assert resolve(refs, no_env)["T"].reveal() == "first-value-123"
    secret_file(path, "second-value-456\n")
    assert resolve(refs, no_env)["T"].reveal() == "second-value-456"


# ---------------------------------------------------------------- cmd:


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
        assert _gone(pid), f"the {pidfile} process {pid} outlived the timeout"


def test_ctrl_c_while_waiting_stops_the_programs(tmp_path):
    # The programs run in their own sessions (a timeout kills the whole group), so the
    # terminal's SIGINT does not reach them: the runner must stop them itself.
    import signal
    import subprocess
    import sys
    import time

    hang = script(tmp_path / "hang", f"echo $$ > {tmp_path}/self.tmp\nmv {tmp_path}/self.tmp {tmp_path}/self\nexec sleep 300\n")
    code = (
        "from runner.secrets.refs import parse_ref, resolve\n"
        f"resolve([parse_ref('T', 'cmd:{hang}')], lambda n: None, timeout=120)\n"
    )
    runner = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
    try:
        for _ in range(600):  # polling for the pid file, not timing anything
            if (tmp_path / "self").exists() or runner.poll() is not None:
                break
            time.sleep(0.05)
        pid = int((tmp_path / "self").read_text())
        runner.send_signal(signal.SIGINT)
        stderr = runner.communicate(timeout=60)[1]
    finally:
        if runner.poll() is None:
            runner.kill()
    assert b"KeyboardInterrupt" in stderr
    assert _gone(pid), "the cmd: program outlived the interrupted runner"


def _gone(pid: int) -> bool:
    """Dead or a zombie (killed, not yet reaped by init), polled for a while."""
    import time

    for _ in range(100):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


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


def test_references_resolve_in_parallel(tmp_path):
    # Each program waits until all N have started: run one after another, the first
    # would never see the others and fail after its 300 polls.
    n = 4
    arrivals = tmp_path / "arrivals"
    arrivals.mkdir()
    barrier = script(
        tmp_path / "barrier",
        f': > {arrivals}/$$\ni=0\nwhile [ "$(ls {arrivals} | wc -l)" -lt {n} ]; do\n'
        '  i=$((i+1)); [ "$i" -gt 300 ] && { echo "started alone" >&2; exit 1; }\n  sleep 0.05\ndone\n'
        'echo "value-$1"\n',
    )
    refs = [ref(f"TOKEN_{i}", f"cmd:{barrier} {i}") for i in range(n)]
    got = resolve(refs, no_env, timeout=60)
    assert {name: s.reveal() for name, s in got.items()} == {f"TOKEN_{i}": f"value-{i}" for i in range(n)}
    assert len(list(arrivals.iterdir())) == n  # each program ran exactly once


def test_only_the_references_given_are_resolved(tmp_path):
    marker = tmp_path / "ran"
    other = script(tmp_path / "other", f": > {marker}\necho other-value\n")
    refs = [ref("NEEDED", "env:A"), ref("NOT_NEEDED", f"cmd:{other}")]
    got = resolve([r for r in refs if r.name == "NEEDED"], {"A": "needed-value"}.get)
    assert set(got) == {"NEEDED"} and not marker.exists()


# ---------------------------------------------------------------- all at once


def test_every_failure_is_listed_at_once_naming_references_never_values(tmp_path):
    values = {"SHARED": canary("shared"), "FAILS": canary("fails")}
    shared = secret_file(tmp_path / "shared", values["SHARED"] + "\n", 0o644)
    failing = script(tmp_path / "failing", f'echo {shlex.quote(values["FAILS"])}\nexit 2\n')
    refs = [
        ref("UNSET", "env:PRIMUS_TEST_UNSET"),
        ref("SHARED", f"file:{shared}"),
        ref("ABSENT", f"file:{tmp_path / 'absent'}"),
        ref("FAILS", f"cmd:{failing}"),
        ref("GOOD", "env:GOOD_SOURCE"),
    ]
    with pytest.raises(ConfigError) as info:
        resolve(refs, {"GOOD_SOURCE": "good-value-789"}.get)
    problems = info.value.problems
    assert [p.where for p in problems] == ["test:UNSET", "test:SHARED", "test:ABSENT", "test:FAILS"]
    for r in refs[:4]:
        assert f"{r.name} ({r.source})" in info.value.message
    assert_no_leak(error_text(info.value), {**values, "GOOD": "good-value-789"}, "the all-failures error")


def test_definite_failures_win_over_unreachable_stores_and_both_are_listed(tmp_path):
    hang = script(tmp_path / "hang", "exec sleep 300\n")
    refs = [ref("SLOW", f"cmd:{hang}"), ref("UNSET", "env:PRIMUS_TEST_UNSET")]
    with pytest.raises(ConfigError) as info:  # a retry cannot help: exit 2
        resolve(refs, no_env, timeout=1.0)
    assert "SLOW (cmd:" in info.value.message and "not reachable" in info.value.message
    assert "UNSET (env:PRIMUS_TEST_UNSET)" in info.value.message
    refs = [ref("SLOW", f"cmd:{hang}"), ref("GONE", "cmd:primus-no-such-program")]
    with pytest.raises(EngineUnavailable) as unreachable:  # only unreachable stores: exit 1, both named
        resolve(refs, no_env, timeout=1.0)
    assert "SLOW (cmd:" in unreachable.value.message and "GONE (cmd:primus-no-such-program)" in unreachable.value.message


def test_check_refs_reports_each_reference_without_values(tmp_path):
    good = canary("good")
    shared = canary("shared")
    path = secret_file(tmp_path / "good", good + "\n")
    bad = secret_file(tmp_path / "bad", shared + "\n", 0o644)
    refs = [ref("GOOD", f"file:{path}"), ref("BAD", f"file:{bad}"), ref("GONE", "cmd:primus-no-such-program")]
    report = check_refs(refs, no_env, 5.0)
    assert [(r["name"], r["source"], r["found"], r["unreachable"]) for r in report] == [
        ("GOOD", f"file:{path}", True, False),
        ("BAD", f"file:{bad}", False, False),
        ("GONE", "cmd:primus-no-such-program", False, True),
    ]
    assert report[0]["error"] is None and "readable by group or others" in report[1]["error"]
    assert_no_leak(json.dumps(report), {"GOOD": good, "BAD": shared}, "check_refs report")

