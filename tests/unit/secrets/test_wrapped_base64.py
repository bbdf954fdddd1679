"""A secret over 57 bytes, base64-encoded with line wrapping (``base64``, 76 columns; PEM, 64), is masked line by line."""

from __future__ import annotations

import subprocess
import uuid

import pytest

from runner.secrets import Masker


def long_secret(n: int) -> str:
    return ("canary-wrapped-" + uuid.uuid4().hex * 4)[:n]


@pytest.mark.parametrize("size", [58, 100, 200])
@pytest.mark.parametrize("how", [["base64"], ["base64", "-w", "64"]])
@pytest.mark.parametrize("newline", [False, True])  # printf %s vs echo
def test_wrapped_base64_is_masked_line_by_line(size, how, newline):
    secret = long_secret(size)
    encoded = subprocess.run(how, input=(secret + ("\n" if newline else "")).encode(), capture_output=True, check=True).stdout.decode()
    lines = encoded.splitlines()
    assert len(lines) >= 2, "wrapped"
    masker = Masker([secret])
    masked = masker.mask("the job printed:\n" + encoded)
    stream = masker.stream()
    streamed = b"".join(stream.feed(encoded[i:i + 7].encode()) for i in range(0, len(encoded), 7)) + stream.flush()
    for output in (masked, streamed.decode()):
        for line in lines[:-1]:  # every full line depends on the secret alone
            assert line not in output, "a line of the wrapped base64 is shown"
        if not newline:
            assert lines[-1] not in output or len(lines[-1]) < 8
