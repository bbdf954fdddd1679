"""How a store says it could not give a value: the entry is not there (``Missing``, exit 2)
or the store could not be reached (``Unreachable``, exit 1). Never the value itself."""

from __future__ import annotations


class Missing(Exception):
    """The store answered: no such entry, the program failed, the file is refused (exit 2)."""

    def __init__(self, message: str, stderr: bytes = b"", foreign: str = "", hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.stderr = stderr  # the program's stderr, shown only after masking
        self.foreign = foreign  # other text from the store (an AWS error message), masked too
        self.hint = hint


class Unreachable(Missing):
    """The store could not be reached: timeout, connection refused, client missing (exit 1)."""
