"""The secrets shim run by real POSIX shells on the host, and size parsing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from runner.engines.docker.container import parse_bytes
from runner.engines.docker.shim import SHIM, encode_payload, env_fallback, shim_entrypoint
from runner.errors import ConfigError
from runner.secrets import Secret

SHELLS = [s for s in (["/bin/sh"], ["/bin/dash"], ["/bin/bash", "--posix"], ["/bin/busybox", "sh"]) if os.path.exists(s[0])]
VALUES = {
    "PLAIN_TOKEN": "abc123",
    "WEIRD_TOKEN": "a\\b\n\nc'\"$x`é \\0101 %s \\c end\n\n",
    "EMPTY_LINE_TOKEN": "\n",
}
DUMP = "import os, sys, json; sys.stdout.write(json.dumps({k: os.environ.get(k) for k in sys.argv[1:]}))"


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: os.path.basename(s[0]))
def test_shim_exports_every_byte_and_execs_the_job(shell):
    payload = encode_payload({k: Secret(v) for k, v in VALUES.items()})
    argv = [*shell, "-c", SHIM, "primus-shim", sys.executable, "-c", DUMP, *VALUES]
    result = subprocess.run(argv, input=payload, capture_output=True, timeout=30)
    assert result.returncode == 0, result.stderr
    import json

    assert json.loads(result.stdout) == VALUES


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: os.path.basename(s[0]))
def test_shim_gives_the_job_an_empty_stdin_and_its_exit_code(shell):
    payload = encode_payload({"A_TOKEN": Secret("x")}) + b"this line is not for the job\n"
    argv = [*shell, "-c", SHIM, "primus-shim", "sh", "-c", "cat; exit 17"]
    result = subprocess.run(argv, input=payload, capture_output=True, timeout=30)
    assert result.returncode == 17 and result.stdout == b""


def test_payload_and_argv_hold_no_plain_value():
    value = "plain-canary-value-1234"
    payload = encode_payload({"X_TOKEN": Secret(value)})
    assert value.encode() not in payload
    assert all(value not in part for part in shim_entrypoint())
    assert payload.endswith(b"\n\n") and payload.isascii()


def test_shim_refuses_a_bad_name():
    shell = SHELLS[0]
    result = subprocess.run([*shell, "-c", SHIM, "primus-shim", "true"], input=b"1BAD=\\0101\n\n", capture_output=True, timeout=30)
    assert result.returncode == 127 and b"bad variable name" in result.stderr


@pytest.mark.parametrize("text,expected", [("16m", 16 << 20), ("64g", 64 << 30), ("1024", 1024), ("1.5k", 1536), ("2GB", 2 << 30)])
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


def test_parse_bytes_refuses_nonsense():
    with pytest.raises(ConfigError):
        parse_bytes("lots")


def test_with_i_the_job_reads_the_stdin_that_follows_the_secrets():
    payload = encode_payload({"A_TOKEN": Secret("x")}) + b"for the job\n"
    argv = [*shim_entrypoint(interactive=True), "sh", "-c", 'printf %s "$A_TOKEN:"; cat']
    result = subprocess.run(argv, input=payload, capture_output=True, timeout=30)
    assert result.returncode == 0 and result.stdout == b"x:for the job\n", result.stderr
    assert shim_entrypoint()[2] == SHIM and shim_entrypoint(tty=True)[2] != shim_entrypoint(interactive=True)[2]


def test_the_env_fallback_is_name_equals_value():
    assert env_fallback({"A_TOKEN": Secret("v 1"), "B_KEY": Secret("")}) == ["A_TOKEN=v 1", "B_KEY="]


def test_the_tty_shim_without_a_working_stty_exits_127_before_it_says_ready(tmp_path):
    """No stty (here: none on PATH, and stdin no terminal): refused before the ready marker, so the
    runner, which writes the payload only after it, writes no secret."""
    from runner.engines.docker.shim import READY, TTY_SHIM

    result = subprocess.run(["/bin/sh", "-c", TTY_SHIM, "primus-shim", "true"], input=b"", capture_output=True, timeout=30,
                            env={"PATH": str(tmp_path)})
    assert result.returncode == 127 and READY not in result.stdout
    assert b"no working stty" in result.stderr
