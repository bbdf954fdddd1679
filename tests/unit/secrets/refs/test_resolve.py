"""Resolving references (runner.secrets.refs.resolve): in parallel, each bounded, every
failure at once naming references never values, an interrupt stops the programs.

Every value is a fresh canary; errors and reports are checked for it (and its
encodings) with engines.assert_no_leak. No wall-clock asserts: parallelism is shown
by a barrier the programs can only pass together."""

from __future__ import annotations

import json
import shlex

import pytest

from engine_fixtures import assert_no_leak
from runner.errors import ConfigError, EngineUnavailable
from runner.secrets.refs.resolve import check_refs, resolve
from secret_ref_helpers import canary, error_text, gone, no_env, ref, script, secret_file


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


def test_ctrl_c_while_waiting_stops_the_programs(tmp_path):
    # The programs run in their own sessions (a timeout kills the whole group), so the
    # terminal's SIGINT does not reach them: the runner must stop them itself.
    import signal
    import subprocess
    import sys
    import time

    hang = script(tmp_path / "hang", f"echo $$ > {tmp_path}/self.tmp\nmv {tmp_path}/self.tmp {tmp_path}/self\nexec sleep 300\n")
    code = (
        "from runner.secrets.refs.grammar import parse_ref\n"
        "from runner.secrets.refs.resolve import resolve\n"
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
    assert gone(pid), "the cmd: program outlived the interrupted runner"


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
