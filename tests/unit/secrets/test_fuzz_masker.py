"""Property: the masker hides every secret in every encoding, across any chunking, and nothing else.

- any secrets, any surrounding bytes, any encoding among ``encodings()``, any
  split into chunks: the output holds no encoding of any secret;
- bytes that hold no secret come out unchanged, byte for byte, streamed or not;
- streaming output (``MaskedStream.feed``/``flush``) equals one-shot ``mask_bytes``.

Values never contain ``*`` (the mask itself) and no lone surrogates (an
environment value cannot hold one that UTF-8 with surrogateescape cannot encode),
and have at least 6 bytes (shorter values are not masked, by policy). The forms
are computed here (``forms_of``), independently of ``runner.secrets.encodings``.
"""

from __future__ import annotations

import base64
import json

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from runner.secrets import Masker

SECRET = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="*\x00"), min_size=1, max_size=40).filter(
    lambda s: len(s.encode()) >= 6)
UNRESERVED = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"


def percent(raw: bytes, safe: bytes, hexdigits: str = "%02X", space_plus: bool = False) -> bytes:
    out = bytearray()
    for b in raw:
        if b in UNRESERVED or b in safe:
            out.append(b)
        elif space_plus and b == 0x20:
            out += b"+"
        else:
            out += b"%" + (hexdigits % b).encode()
    return bytes(out)


def forms_of(value: str) -> set[bytes]:
    """What a job prints a value as: plain, percent (quote, quote(safe='/'), quote_plus,
    encodeURIComponent; upper- and lower-case hex), JSON escapes (and ``\\/``), base64 and
    base64url, whole and the characters only the value decides at each byte offset."""
    raw = value.encode()
    forms = {raw}
    for safe, plus in ((b"", False), (b"/", False), (b"!*'()", False), (b"", True)):
        for hexdigits in ("%02X", "%02x"):
            forms.add(percent(raw, safe, hexdigits, plus))
    for escaped in (json.dumps(value)[1:-1].encode(), json.dumps(value, ensure_ascii=False)[1:-1].encode()):
        forms.update((escaped, escaped.replace(b"/", b"\\/")))
    for codec in (base64.b64encode, base64.urlsafe_b64encode):
        forms.add(codec(raw))
        for offset in range(3):
            blob = codec(b"\xff" * offset + raw)
            stable = blob[-(-8 * offset // 6):8 * (offset + len(raw)) // 6]
            if len(stable) >= 6:
                forms.add(stable)
    if "\n" in value:
        forms.update(line.strip() for line in raw.splitlines() if len(line.strip()) >= 6)
    forms.discard(b"")
    return forms


def ends_in_partial(data: bytes, forms) -> bool:
    """True when ``data`` ends in a tail the end-of-text rule masks (see the masker)."""
    for k in range(len(data), 0, -1):
        fits = [len(f) for f in forms if len(f) > k and f.startswith(data[-k:])]
        if fits:
            return k >= 4 and k >= min(8, -(-min(fits) // 2))
    return False
SECRETS = st.lists(SECRET, min_size=1, max_size=4, unique=True)
NOISE = st.binary(max_size=200)


def fuzz(n: int) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0] + points, points + [len(data)])]


def streamed(masker: Masker, chunks: list[bytes]) -> bytes:
    stream = masker.stream()
    return b"".join(stream.feed(c) for c in chunks) + stream.flush()


@fuzz(700)
@given(secrets=SECRETS, pieces=st.lists(st.tuples(NOISE, st.integers(0, 3), st.integers(0, 100)), min_size=1, max_size=4),
       tail=NOISE, cuts=st.lists(st.integers(0, 10_000), max_size=8))
def test_every_encoding_is_masked_across_any_chunking(secrets, pieces, tail, cuts):
    masker = Masker(secrets)
    forms = sorted({f for s in secrets for f in forms_of(s)})
    data = b"".join(noise + forms[(i * 101 + j) % len(forms)] for noise, i, j in pieces) + tail
    one_shot = masker.mask_bytes(data)
    for form in forms:
        assert form not in one_shot
    assert streamed(masker, split(data, cuts)) == one_shot
    assert not masker.contains_secret(one_shot)


@fuzz(500)
@given(secrets=SECRETS, data=st.binary(max_size=400), cuts=st.lists(st.integers(0, 10_000), max_size=8))
def test_text_without_secrets_is_untouched(secrets, data, cuts):
    masker = Masker(secrets)
    assume(not masker.contains_secret(data))
    assume(not ends_in_partial(data, {f for s in secrets for f in forms_of(s)}))
    assert masker.mask_bytes(data) == data
    assert streamed(masker, split(data, cuts)) == data


@fuzz(500)
@given(secrets=SECRETS, data=st.binary(max_size=300), cuts=st.lists(st.integers(0, 10_000), max_size=10), sizes=st.integers(1, 7))
def test_streaming_equals_one_shot_on_any_input(secrets, data, cuts, sizes):
    masker = Masker(secrets)
    # Salt the input with secret prefixes so chunk boundaries fall inside partial matches.
    salted = data + b"".join(s.encode()[: sizes] for s in secrets) + data[:sizes]
    assert streamed(masker, split(salted, cuts)) == masker.mask_bytes(salted)
    assert streamed(masker, [salted[i:i + 1] for i in range(len(salted))]) == masker.mask_bytes(salted)
