"""Secret values as a type, and the one masker for every stream the runner prints.

A ``Secret`` prints ``***`` in every format and refuses to be pickled, so a
leak needs a deliberate ``.reveal()`` call: grep for it to find every place a
value leaves the process.
"""

from __future__ import annotations

import base64
import hmac
import json
import urllib.parse
from typing import Iterable

MASK = "***"
_MASK_BYTES = MASK.encode()
# Encodings of very short values would mask ordinary text; below this length
# only the plain value is masked.
_MIN_ENCODED_LEN = 6


class Secret:
    """A secret value. ``str()``, ``repr()``, f-strings and ``%`` all print ``***``."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        if isinstance(value, Secret):
            value = value.reveal()
        self._value = value

    def reveal(self) -> str:
        """The plain value. Call only where an engine needs it, at the last moment."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return MASK

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    __hash__ = None  # type: ignore[assignment]

    def __reduce_ex__(self, protocol):  # pickle, copy.copy of containers, yaml.dump
        raise TypeError("a Secret cannot be serialised; only .reveal() gives its value")

    def __copy__(self) -> "Secret":
        return self

    def __deepcopy__(self, memo) -> "Secret":
        return self


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
    forms.discard(b"")
    return forms


class Masker:
    """Replaces every secret value and its encodings with ``***``.

    One instance serves every stream; ``stream()`` gives a per-stream state that
    stays correct across chunk boundaries.
    """

    def __init__(self, values: Iterable[str | Secret] = ()):
        plain = {v.reveal() if isinstance(v, Secret) else v for v in values}
        self._patterns = sorted({form for v in plain if v for form in encodings(v)}, key=len, reverse=True)
        self._automaton = None
        self._prefixes: frozenset[bytes] = frozenset()
        self.max_len = max((len(p) for p in self._patterns), default=0)
        if self._patterns:
            import ahocorasick_rs

            self._automaton = ahocorasick_rs.BytesAhoCorasick(
                self._patterns, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest
            )
            self._prefixes = frozenset(p[:k] for p in self._patterns for k in range(1, len(p)))

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def mask_bytes(self, data: bytes) -> bytes:
        out, rest = self._mask_upto(data, final=True)
        return out

    def mask(self, text: str) -> str:
        if not self._patterns or not text:
            return text
        data = text.encode("utf-8", "surrogateescape")
        return self.mask_bytes(data).decode("utf-8", "surrogateescape")

    def contains_secret(self, data: bytes) -> bool:
        return bool(self._automaton and self._automaton.find_matches_as_indexes(data))

    def stream(self) -> "MaskedStream":
        return MaskedStream(self)

    def _mask_upto(self, data: bytes, final: bool) -> tuple[bytes, bytes]:
        """Mask ``data``; unless ``final``, hold back a tail that may begin a secret."""
        if self._automaton is None:
            return data, b""
        keep = 0 if final else self._pending_len(data)
        cut = len(data) - keep
        parts: list[bytes] = []
        pos = 0
        for _, start, end in self._automaton.find_matches_as_indexes(data):
            if start >= cut:
                break
            parts.append(data[pos:start])
            parts.append(_MASK_BYTES)
            pos = end
        if pos > cut:
            cut = pos
        parts.append(data[pos:cut])
        return b"".join(parts), data[cut:]

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

    def feed(self, chunk: bytes) -> bytes:
        if not chunk:
            return b""
        out, self._pending = self._masker._mask_upto(self._pending + chunk, final=False)
        return out

    def flush(self) -> bytes:
        out, _ = self._masker._mask_upto(self._pending, final=True)
        self._pending = b""
        return out
