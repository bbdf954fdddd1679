"""The one masker for every stream the runner prints, and the encodings it knows.

Built in one place only: ``runner.secrets.scope.secret_scope``. A test fails if
any other module of the package constructs a ``Masker``.

Floors: a value under 6 bytes is not masked (named in ``Masker.too_short``; the
policy warns); encodings, base64 included, are masked for values of 6 bytes or
more (base64 at all three byte offsets). A stream that ends (or one-shot text
that stops) inside a secret has that cut-off start masked when it is at least 4
bytes and at least min(8, half the form it begins). Building and per-write work
are linear: no set of all prefixes, no per-byte loop in Python.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import urllib.parse
from typing import Iterable

from runner.secrets.value import MASK, Secret

_MASK_BYTES = MASK.encode()
# A value shorter than this is not masked at all: "1", "true", "false" would garble
# every line and make JSON invalid, and a credential is never that short. The
# policy warns about such a value by name (runner.policy) instead.
MIN_SECRET_LEN = 6
# Encodings of short values would mask ordinary text; below this length only the
# plain value is masked. Base64: a form is kept when it has at least this many
# characters that depend only on the value, so every value of 6 bytes or more is
# found in a base64 blob at any of the three byte offsets.
_MIN_ENCODED_LEN = 6
# At the end of a stream (or of one-shot text) a tail that begins a secret but
# stops short (the job died, the text was cut) is masked when it is at least
# _HEAD bytes and at least min(this, half the shortest secret form it begins); a
# shorter tail is printed: it reveals less than half of the form, at most 7 bytes.
PARTIAL_MASK_LEN = 8
_HEAD = 4  # tails of this length or more are found through their first _HEAD bytes
_URI_COMPONENT_SAFE = "-_.!~*'()"  # JavaScript encodeURIComponent leaves these as they are


def _raw(value: str | bytes) -> bytes:
    """A value as the bytes a process prints: os.environ holds undecodable bytes as surrogates."""
    return value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")


def _b64_stable(raw: bytes, offset: int, codec) -> bytes:
    """The base64 characters that depend only on ``raw`` when it starts ``offset`` bytes
    into a blob: what appears whatever surrounds it."""
    blob = codec(b"\0" * offset + raw)
    start = -(-8 * offset // 6)
    end = 8 * (offset + len(raw)) // 6
    return blob[start:end]


def _lower_percent(form: bytes) -> bytes:
    return re.sub(rb"%[0-9A-F]{2}", lambda m: m.group(0).lower(), form)


_DFA_BYTES = 8 << 10


def encodings(value: str | bytes) -> set[bytes]:
    """The plain value and the forms a job might print it in.

    Percent-encoding (``quote`` with ``safe=""`` and its default ``safe="/"``,
    ``quote_plus``, JavaScript ``encodeURIComponent``, each in upper- and
    lower-case hex), JSON string escapes (with and without ``\\/``), and base64 /
    base64url: the whole value padded, and the characters that depend only on the
    value at each of the three byte offsets (like the GitHub Actions runner), so a
    value inside a larger blob (an ``Authorization: Basic`` header) is found.
    The floor: only the plain form of a value shorter than 6 bytes is masked, and
    values shorter than 6 bytes (``MIN_SECRET_LEN``) are not masked at all.
    """
    raw = _raw(value)
    text = raw.decode("utf-8", "surrogateescape")
    forms = {raw}
    if len(raw) >= _MIN_ENCODED_LEN:
        for safe in ("", "/", _URI_COMPONENT_SAFE):
            quoted = urllib.parse.quote(raw, safe=safe).encode()
            forms.update((quoted, _lower_percent(quoted)))
        plus = urllib.parse.quote_plus(raw).encode()
        forms.update((plus, _lower_percent(plus)))
        for ensure_ascii in (True, False):
            escaped = json.dumps(text, ensure_ascii=ensure_ascii)[1:-1].encode("utf-8", "surrogateescape")
            forms.update((escaped, escaped.replace(b"/", b"\\/")))
        for codec in (base64.b64encode, base64.urlsafe_b64encode):
            forms.add(codec(raw))
            for offset in range(3):
                form = _b64_stable(raw, offset, codec)
                if len(form) >= _MIN_ENCODED_LEN:
                    forms.add(form)
        forms.update(_wrapped_b64(raw))
    if b"\n" in raw:  # a PEM key or a JSON credential printed line by line (a logger's prefix per line)
        for line in raw.splitlines():
            line = line.strip()
            if len(line) >= _MIN_ENCODED_LEN:
                forms.add(line)
    forms.discard(b"")
    return forms


# ``base64`` (coreutils) and MIME wrap at 76 columns, PEM and ``openssl base64`` at 64.
_B64_WRAP = (76, 64)
_MIN_WRAPPED_PIECE = 8


def _wrapped_b64(raw: bytes) -> set[bytes]:
    """The lines of a wrapped base64 encoding of ``raw`` (a value over 57 bytes spans lines):
    each line is masked on its own, whether the value ends the input (padded) or more follows
    (``echo`` adds a newline: only the characters the value alone decides)."""
    pieces: set[bytes] = set()
    for whole in (base64.b64encode(raw), _b64_stable(raw, 0, base64.b64encode)):
        for width in _B64_WRAP:
            if len(whole) <= width:
                continue
            pieces.update(p for p in (whole[i:i + width] for i in range(0, len(whole), width)) if len(p) >= _MIN_WRAPPED_PIECE)
    return pieces


class Masker:
    """Replaces every secret value and its encodings with ``***``.

    Overlapping occurrences (two secrets sharing a prefix/suffix, a value inside
    another's encoding) are merged into one masked span, so no part of either is
    shown. One instance serves every stream; ``stream()`` gives a per-stream state
    that stays correct across chunk boundaries.
    """

    def __init__(self, named: Iterable[tuple[str, str | Secret] | str | Secret] = ()):
        """``named``: (NAME, value) pairs, whose names ``matches`` reports (audit); a bare
        value is reported as "secret". Values shorter than ``MIN_SECRET_LEN`` bytes are
        not masked; their names are in ``too_short``.

        Building is linear in the total length of the values: the patterns, their
        first ``_HEAD`` bytes and their prefixes shorter than that, never the set of
        all prefixes.
        """
        owners: dict[bytes, set[str]] = {}
        too_short: set[str] = set()
        for item in named:
            name, value = item if isinstance(item, tuple) else ("secret", item)
            plain = value.reveal() if isinstance(value, Secret) else value
            if not plain:
                continue
            if len(_raw(plain)) < MIN_SECRET_LEN:
                too_short.add(name)
                continue
            for form in encodings(plain):
                owners.setdefault(form, set()).add(name)
        self.too_short = tuple(sorted(too_short))
        self._patterns = sorted(owners, key=len, reverse=True)
        self._owners = [tuple(sorted(owners[p])) for p in self._patterns]
        self._automaton = None
        self._heads = None
        self._head_patterns: list[list[bytes]] = []
        self._short: dict[bytes, int] = {}  # a prefix shorter than _HEAD -> the shortest pattern it begins
        self.max_len = max((len(p) for p in self._patterns), default=0)
        if self._patterns:
            import ahocorasick_rs

            # Up to _DFA_BYTES of patterns a DFA (the fastest search, its construction bounded by that
            # size); beyond it a contiguous NFA, built in linear time: a DFA's construction grows
            # superlinearly in a long, repetitive value (a 16 KB run of one byte took 25 s), while
            # the NFA searches at about half its speed.
            kind = "DFA" if sum(map(len, self._patterns)) <= _DFA_BYTES else "ContiguousNFA"
            automaton = functools.partial(ahocorasick_rs.BytesAhoCorasick, matchkind=ahocorasick_rs.MatchKind.Standard,
                                          implementation=getattr(ahocorasick_rs.Implementation, kind))
            self._automaton = automaton(self._patterns)
            by_head: dict[bytes, list[bytes]] = {}
            for p in self._patterns:
                for k in range(1, min(_HEAD, len(p))):
                    self._short[p[:k]] = min(self._short.get(p[:k], len(p)), len(p))
                if len(p) > _HEAD:
                    by_head.setdefault(p[:_HEAD], []).append(p)
            if by_head:
                heads = list(by_head)
                self._head_patterns = [by_head[h] for h in heads]
                self._heads = automaton(heads)

    def matches(self, data: bytes):
        """(NAME, start, end) for every occurrence of every encoding in ``data``, overlapping ones too."""
        if self._automaton is None or not data:
            return
        for index, start, end in self._automaton.find_matches_as_indexes(data, overlapping=True):
            for name in self._owners[index]:
                yield name, start, end

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def mask_bytes(self, data: bytes) -> bytes:
        return self._mask_upto(data, final=True)[0]

    def mask(self, text: str) -> str:
        if not self._patterns or not text:
            return text
        data = text.encode("utf-8", "surrogateescape")
        return self.mask_bytes(data).decode("utf-8", "surrogateescape")

    def contains_secret(self, data: bytes) -> bool:
        return bool(self._automaton and self._automaton.find_matches_as_indexes(data))

    def stream(self) -> "MaskedStream":
        return MaskedStream(self)

    def _spans(self, buf: bytes) -> list[list[int]]:
        """Every occurrence in ``buf``, overlapping ones merged: sorted [start, end) spans."""
        spans: list[list[int]] = []
        for _, start, end in sorted(self._automaton.find_matches_as_indexes(buf, overlapping=True), key=lambda m: m[1]):
            if spans and start < spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        return spans

    def _mask_upto(self, data: bytes, final: bool, context: bytes = b"", in_mask: bool = False) -> tuple[bytes, bytes, bytes, bool]:
        """Mask ``data``; unless ``final``, hold back a tail that may begin a secret.

        ``context`` is the raw text already emitted just before ``data`` (so a secret
        that began there and continues here is found), ``in_mask`` whether that
        emission ended inside a mask. Returns (output, held-back raw bytes, the new
        context, whether the output ends inside a mask). When ``final``, a tail that
        begins a secret is masked by the rule of ``PARTIAL_MASK_LEN``.
        """
        if self._automaton is None:
            return data, b"", b"", False
        buf = context + data
        off = len(context)
        pending, shortest = self._pending(buf)
        cut = len(buf) if final else max(off, len(buf) - pending)
        parts: list[bytes] = []
        pos = off
        for start, end in self._spans(buf):
            if end <= off:
                continue
            if start >= cut:
                break
            if start < pos:  # began in the context: continues the mask already emitted
                if not in_mask:
                    parts.append(_MASK_BYTES)
            else:
                parts.append(buf[pos:start])
                parts.append(_MASK_BYTES)
            in_mask = True
            pos = end
        if final and pending and pending >= _HEAD and pending >= min(PARTIAL_MASK_LEN, -(-shortest // 2)):
            begin = max(len(buf) - pending, off)
            if begin >= pos:  # the cut-off start of a secret: no part of it is printed
                if begin > pos:
                    parts.append(buf[pos:begin])
                    in_mask = False
                if not in_mask:
                    parts.append(_MASK_BYTES)
                in_mask = True
                pos = len(buf)
        clean = not in_mask and pos <= cut == len(buf) - pending
        if pos < cut:
            parts.append(buf[pos:cut])
            in_mask = False
            clean = cut == len(buf) - pending
        cut = max(cut, pos)
        # Clean: the output ended in raw text at the held-back tail, so no suffix of what was
        # emitted begins a secret (it would be in the tail): the next write needs no context.
        # Line-sized writes then cost their own length, not the longest secret's.
        context = b"" if clean else buf[max(0, cut - self.max_len + 1):cut]
        return b"".join(parts), buf[cut:], context, in_mask

    def _pending(self, buf: bytes) -> tuple[int, int]:
        """(length of the longest tail of ``buf`` that is a proper prefix of a pattern, the
        length of the shortest pattern it begins); (0, 0) when none.

        A tail of ``_HEAD`` bytes or more begins with a pattern's head: the head
        automaton finds the few places it can start (in C), and each is checked with
        ``startswith``; shorter tails are looked up. Nothing is done per byte in Python.
        """
        if self.max_len <= 1:
            return 0, 0
        window = buf[-(self.max_len - 1):]
        if self._heads is not None and len(window) >= _HEAD:
            starts: dict[int, list[int]] = {}
            for index, start, _ in self._heads.find_matches_as_indexes(window, overlapping=True):
                starts.setdefault(start, []).append(index)
            for start in sorted(starts):
                tail = window[start:]
                fits = [len(p) for index in starts[start] for p in self._head_patterns[index]
                        if len(p) > len(tail) and p.startswith(tail)]
                if fits:
                    return len(tail), min(fits)
        for k in range(min(_HEAD - 1, len(buf)), 0, -1):
            shortest = self._short.get(buf[-k:])
            if shortest is not None:
                return k, shortest
        return 0, 0


class MaskedStream:
    """Per-stream state: feed chunks in, get masked bytes out, ``flush()`` at the end.

    Only a tail that could still become a secret is held back, so ordinary
    output (ending in a newline) is passed on at once.
    """

    def __init__(self, masker: Masker):
        self._masker = masker
        self._pending = b""
        self._context = b""  # the raw bytes emitted last (a secret may have begun there)
        self._in_mask = False

    def feed(self, chunk: bytes) -> bytes:
        if not chunk:
            return b""
        out, self._pending, self._context, self._in_mask = self._masker._mask_upto(
            self._pending + chunk, False, self._context, self._in_mask)
        return out

    def flush(self) -> bytes:
        out, _, _, _ = self._masker._mask_upto(self._pending, True, self._context, self._in_mask)
        self._pending = b""
        return out
