"""Adversarial review, masker: values that are awkward to mask, and streams that end badly."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.secrets import Masker, Secret, encodings
from engine_fixtures import assert_no_leak


def streamed(masker: Masker, chunks) -> bytes:
    stream = masker.stream()
    return b"".join(stream.feed(c) for c in chunks) + stream.flush()


def every_split(data: bytes):
    """All two-way and byte-by-byte splits."""
    for i in range(len(data) + 1):
        yield [data[:i], data[i:]]
    yield [data[i:i + 1] for i in range(len(data))]


def test_values_too_short_to_mask_are_named_and_garble_nothing():
    """Below MIN_SECRET_LEN bytes a value would mask "1", "true", "false" everywhere: not masked, named."""
    masker = Masker([("A", "a"), ("E", ""), ("F", Secret("")), ("X", "xy"), ("U", "é"), ("P", Secret("%")), ("B", "false")])
    assert masker.mask("banana xy é 100% false") == "banana xy é 100% false"
    for chunks in every_split(b"banana xy\n"):
        assert streamed(masker, chunks) == b"banana xy\n"
    assert masker.too_short == ("A", "B", "P", "U", "X")
    assert Masker(["", Secret("")]).mask("anything") == "anything"  # no value, nothing to mask
    assert Masker(["sixsix"]).mask("a sixsix b") == "a *** b"  # the floor itself is masked


def test_overlapping_secrets_show_no_part_of_either():
    a, b = "tokAAA" + uuid.uuid4().hex[:6], None
    b = a[-5:] + "BBB" + uuid.uuid4().hex[:6]  # B begins with A's last five characters
    masker = Masker([a, b])
    joined = ("log: " + a + b[5:] + " end\n").encode()  # A and B share five bytes
    assert masker.mask_bytes(joined) == b"log: *** end\n"
    for chunks in every_split(joined):
        assert streamed(masker, chunks) == b"log: *** end\n", [len(c) for c in chunks]
    assert_no_leak(masker.mask_bytes(joined), {"A": a, "B": b}, "masked overlap")
    assert b[5:].encode() not in masker.mask_bytes(joined)  # the suffix of B, the part the old masker printed


def test_a_multi_line_value_is_masked_line_by_line():
    """A PEM key printed through a logger that prefixes every line: no line of it survives."""
    body = [uuid.uuid4().hex + uuid.uuid4().hex for _ in range(3)]
    pem = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END PRIVATE KEY-----\n"
    masker = Masker([pem])
    logged = "".join(f"2026-01-01 INFO {line}\n" for line in pem.splitlines()).encode()
    out = masker.mask_bytes(logged)
    for line in body:
        assert line.encode() not in out
    assert out.count(b"***") == len(pem.splitlines())
    for chunks in every_split(logged[:120]):
        assert streamed(masker, chunks) == masker.mask_bytes(logged[:120])
    assert all(line.encode() in encodings(pem) for line in body)  # audit finds a single line too


def test_a_prefix_then_exit_masks_the_held_back_prefix():
    """The job prints the first part of a secret, then exits: the held-back part is masked at
    flush when it is 8 bytes or more (or half the secret); a shorter tail is printed."""
    secret = "canary-" + uuid.uuid4().hex
    masker = Masker([secret])
    stream = masker.stream()
    half = secret[:10].encode()
    assert stream.feed(b"x " + half) == b"x "  # held back: it may become the secret
    assert stream.flush() == b"***"
    stream = masker.stream()
    assert stream.feed(b"x can") == b"x "
    assert stream.flush() == b"can"
    stream = masker.stream()
    assert stream.feed(b"x " + half) + stream.feed(secret[10:].encode() + b"\n") + stream.flush() == b"x ***\n"


def end_partial(data: bytes, forms) -> int:
    """Bytes at the end of ``data`` that the end-of-text rule masks: the longest tail that is a
    proper prefix of a form, when at least 4 bytes and at least min(8, half the shortest such form)."""
    for k in range(len(data), 0, -1):
        tail = data[-k:]
        fits = [len(f) for f in forms if len(f) > k and f.startswith(tail)]
        if fits:
            return k if k >= 4 and k >= min(8, -(-min(fits) // 2)) else 0
    return 0


SECRET = st.text(st.sampled_from("ab%\\\n"), min_size=6, max_size=10)  # MIN_SECRET_LEN


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secrets=st.lists(SECRET, min_size=2, max_size=3, unique=True), noise=st.text(st.sampled_from("abc\n"), max_size=30),
       cuts=st.lists(st.integers(0, 200), max_size=6))
def test_no_byte_of_any_occurrence_survives_on_a_tiny_alphabet(secrets, noise, cuts):
    """Secrets made of the same few characters overlap everywhere: every byte covered by any
    occurrence is masked, streamed or not, and streaming equals one shot."""
    masker = Masker(secrets)
    data = (noise + secrets[0] + secrets[1][1:] + noise + "".join(secrets)).encode()
    one_shot = masker.mask_bytes(data)
    assert not masker.contains_secret(one_shot)
    covered = bytearray(len(data))
    for form in {f for s in secrets for f in encodings(s)}:
        start = data.find(form)
        while start != -1:
            covered[start:start + len(form)] = b"\x01" * len(form)
            start = data.find(form, start + 1)
    partial = end_partial(data, {f for s in secrets for f in encodings(s)})
    if partial and not covered[len(data) - partial]:
        covered[len(data) - partial:] = b"\x01" * partial
    shown = b"".join(data[i:i + 1] for i in range(len(data)) if not covered[i])
    assert one_shot.replace(b"***", b"") == shown
    points = sorted({c % (len(data) + 1) for c in cuts})
    chunks = [data[a:b] for a, b in zip([0] + points, points + [len(data)])]
    assert streamed(masker, chunks) == one_shot


def test_a_long_repetitive_secret_is_masked_across_chunks_on_either_automaton():
    """Past a few KB of patterns the masker switches from a DFA to a linear-time NFA (a DFA over a
    16 KB run of one byte took 25 s to build): both mask every occurrence, across chunk cuts."""
    for value in ("k" * 16384, "ab" * 3000, "padAAAA" * 900):
        masker = Masker([("LONG_TOKEN", value)])
        data = b"start " + value.encode() + b" middle " + value.encode() + b" end\n"
        stream = masker.stream()
        out = b"".join(stream.feed(data[i:i + 777]) for i in range(0, len(data), 777)) + stream.flush()
        assert out == b"start *** middle *** end\n", value[:8]
