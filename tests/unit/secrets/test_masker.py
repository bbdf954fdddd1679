"""The masker (plain value and encodings, across chunk boundaries)."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from runner.secrets import MASK, Masker, Secret

VALUE = "canary-7f3a9c2e1b8d4f60"


def _forms(value: str) -> list[bytes]:
    raw = value.encode()
    return [
        raw,
        base64.b64encode(raw),
        urllib.parse.quote(value, safe="").encode(),
        json.dumps(value)[1:-1].encode(),
    ]


@pytest.mark.parametrize("value", [VALUE, 'p@ss w/"quote"&amp;=+?', "ünïcødé-sécret-✓"])
def test_masker_hides_value_and_encodings(value):
    masker = Masker([value])
    for form in _forms(value):
        text = b"before " + form + b" after"
        masked = masker.mask_bytes(text)
        assert form not in masked, form
        assert masked.startswith(b"before ") and masked.endswith(b" after")


@pytest.mark.parametrize("prefix", [b"", b"u", b"u:", b"user:"])
def test_masker_hides_value_embedded_in_base64_at_any_offset(prefix):
    """e.g. an ``Authorization: Basic`` header: the value's part of the blob is masked."""
    raw = VALUE.encode()
    blob = base64.b64encode(prefix + raw + b"@host")
    masked = Masker([VALUE]).mask_bytes(b"Authorization: Basic " + blob)
    assert MASK.encode() in masked
    # every base64 character that depends only on the value is gone (at most 2 of 3 bytes per edge survive)
    assert len(masked) <= len(b"Authorization: Basic ") + len(blob) - len(raw) * 4 // 3 + 12 + len(MASK)


def test_masker_leaves_other_text_alone():
    masker = Masker([VALUE])
    text = "step 10 loss=1.25 lr=3e-4 tokens/s=12345\n" * 3
    assert masker.mask(text) == text


def test_masking_is_safe_across_every_chunk_boundary():
    masker = Masker([VALUE])
    data = f"token={VALUE}; basic {base64.b64encode(('user:' + VALUE).encode()).decode()} done\n".encode()
    expected = masker.mask_bytes(data)
    assert VALUE.encode() not in expected
    for cut in range(1, len(data)):
        stream = masker.stream()
        out = stream.feed(data[:cut]) + stream.feed(data[cut:]) + stream.flush()
        assert out == expected, cut
    stream = masker.stream()
    out = b"".join(stream.feed(data[i : i + 1]) for i in range(len(data))) + stream.flush()
    assert out == expected


def test_stream_passes_ordinary_lines_through_immediately():
    stream = Masker([VALUE]).stream()
    assert stream.feed(b"step 1\n") == b"step 1\n"
    held = stream.feed(b"x canary-7f3a")  # could be the start of the secret: held back
    assert b"canary" not in held
    assert stream.feed(b"nope\n").endswith(b"canary-7f3anope\n")


def test_empty_masker_is_identity():
    masker = Masker([])
    assert masker.mask("anything") == "anything"
    assert not masker
