"""A third-party client loaded in a background thread while the launch goes on (importing the
MLflow client or boto3 takes longer than a short job runs): one load, once, its failure kept
for the caller; and the libraries' own logs kept off the terminal."""

from __future__ import annotations

import threading
from typing import Any, Callable


class Background:
    """``load()`` run once in a background thread; ``get()`` waits for it (and raises what it raised)."""

    def __init__(self, name: str, load: Callable[[], Any]):
        self.name, self._load_fn = name, load
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._value = None
        self.error: BaseException | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, name=f"primus-runner-{self.name}", daemon=True)
                self._thread.start()

    def _load(self) -> None:
        try:
            self._value = self._load_fn()
        except BaseException as exc:  # a broken install must not kill the thread silently
            self.error = exc

    def wait(self):
        """The loaded value, or None when ``load()`` raised (``error`` says what)."""
        self.start()
        assert self._thread is not None
        self._thread.join()
        return self._value

    def get(self):
        value = self.wait()
        if self.error is not None:
            raise self.error
        return value


def silence_logs(*names: str) -> None:
    """Library logs go to stderr unmasked: silence them; their failures come back as exceptions, printed masked."""
    import logging

    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
