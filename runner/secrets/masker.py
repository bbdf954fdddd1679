"""The one masker for every stream the runner prints, and the encodings it knows.

Built in one place only: ``runner.secrets.scope.secret_scope``. A test fails if
any other module of the package constructs a ``Masker``.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from typing import Iterable

from runner.secrets.value import MASK, Secret

_MASK_BYTES = MASK.encode()
# Encodings of very short values would mask ordinary text; below this length
# only the plain value is masked.
_MIN_ENCODED_LEN = 6


def encodings(value: str) -> set[bytes]:
    """The plain value and the forms a job might print it in.

    Base64 is taken at all three byte alignments (the characters that depend only
    on the value), like the GitHub Actions runner does, so a value embedded in a
    larger base64 blob (an ``Authorization: Basic`` header, a k8s secret) is found.
    """
    raw = value.encode("utf-8", "surrogateescape")
    forms = {raw}
    if len(raw) >= _MIN_ENCODED_LEN:
        forms.add(urllib.parse.quote(value, safe="").encode())
        forms.add(urllib.parse.quote_plus(value).encode())
        forms.add(json.dumps(value)[1:-1].encode())
        forms.add(json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8", "surrogateescape"))
        for shift in range(3):
            aligned = raw[shift:]
            whole = aligned[: len(aligned) // 3 * 3]
            for codec in (base64.b64encode, base64.urlsafe_b64encode):
                form = codec(whole)
                if len(form) >= _MIN_ENCODED_LEN:
                    forms.add(form)
            forms.add(base64.b64encode(aligned))
    if "\n" in value:  # a PEM key or a JSON credential printed line by line (a logger's prefix per line)
        for line in value.splitlines():
            line = line.strip()
            if len(line) >= _MIN_ENCODED_LEN:
                forms.add(line.encode("utf-8", "surrogateescape"))
    forms.discard(b"")
    return forms


class Masker:
    """Replaces every secret value and its encodings with ``***``.

    Overlapping occurrences (two secrets sharing a prefix/suffix, a value inside
    another's encoding) are merged into one masked span, so no part of either is
    shown. One instance serves every stream; ``stream()`` gives a per-stream state
    that stays correct across chunk boundaries.
    """

    def __init__(self, named: Iterable[tuple[str, str | Secret] | str | Secret] = ()):
        """``named``: (NAME, value) pairs, whose names ``matches`` reports (audit); a bare
        value is reported as "secret"."""
        owners: dict[bytes, set[str]] = {}
        for item in named:
            name, value = item if isinstance(item, tuple) else ("secret", item)
            plain = value.reveal() if isinstance(value, Secret) else value
            if not plain:
                continue
            for form in encodings(plain):
                owners.setdefault(form, set()).add(name)
        self._patterns = sorted(owners, key=len, reverse=True)
        self._owners = [tuple(sorted(owners[p])) for p in self._patterns]
        self._automaton = None
        self._prefixes: frozenset[bytes] = frozenset()
        self.max_len = max((len(p) for p in self._patterns), default=0)
        if self._patterns:
            import ahocorasick_rs

            self._automaton = ahocorasick_rs.BytesAhoCorasick(self._patterns, matchkind=ahocorasick_rs.MatchKind.Standard)
            self._prefixes = frozenset(p[:k] for p in self._patterns for k in range(1, len(p)))

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
        context, whether the output ends inside a mask).
        """
        if self._automaton is None:
            return data, b"", b"", False
        buf = context + data
        off = len(context)
        cut = len(buf) if final else max(off, len(buf) - self._pending_len(buf))
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
        if pos < cut:
            parts.append(buf[pos:cut])
            in_mask = False
        cut = max(cut, pos)
        return b"".join(parts), buf[cut:], buf[max(0, cut - self.max_len + 1):cut], in_mask

    def _pending_len(self, data: bytes) -> int:
        """Length of the longest tail of ``data`` that is a proper prefix of a pattern."""
        for k in range(min(self.max_len - 1, len(data)), 0, -1):
            if data[-k:] in self._prefixes:
                return k
        return 0


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
