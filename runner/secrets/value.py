"""A secret value as a type.

A ``Secret`` prints ``***`` in every format and refuses to be pickled, so a
leak needs a deliberate ``.reveal()`` call: grep for it to find every place a
value leaves the process.
"""

from __future__ import annotations


MASK = "***"


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
        import hmac  # here: its OpenSSL binding costs every start-up otherwise

        return hmac.compare_digest(self._value.encode("utf-8", "surrogateescape"), other._value.encode("utf-8", "surrogateescape"))

    __hash__ = None  # type: ignore[assignment]

    def __reduce_ex__(self, protocol):  # pickle, copy.copy of containers, yaml.dump
        raise TypeError("a Secret cannot be serialised; only .reveal() gives its value")

    def __copy__(self) -> "Secret":
        return self

    def __deepcopy__(self, memo) -> "Secret":
        return self
