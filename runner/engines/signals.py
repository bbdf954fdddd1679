"""SIGINT/SIGTERM for the length of a launch, written once for every engine.

The first signal decides the exit code (``runner.ui.exits.EXIT_SIGNAL``: 130/143); what an engine does on a signal is its
own (``handle``): Docker defers it around calls that must complete, the process engine
forwards it to the child's process group. Outside the main thread nothing is installed
(the caller handles signals there).
"""

from __future__ import annotations

import signal

from runner.ui.exits import EXIT_SIGNAL, exit_code


class SignalGuard:
    """Catches SIGINT/SIGTERM from ``install`` until ``restore``; ``got`` is the first one."""

    def __init__(self) -> None:
        self.got: int | None = None
        self._old: dict = {}

    def install(self) -> "SignalGuard":
        try:
            for sig in EXIT_SIGNAL:
                self._old[sig] = signal.signal(sig, self._handler)
        except ValueError:  # not the main thread: the caller handles signals
            self._old = {}
        return self

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}

    def _handler(self, signum, frame) -> None:
        if self.got is None:
            self.got = signum
        self.handle(signum)

    def handle(self, signum: int) -> None:
        """What the engine does on each signal (the first is already in ``got``)."""


def interruption(signum: int, what: str):
    """The ``Interrupted`` a launch ends with when ``signum`` stopped it; ``what``: what became of its job."""
    from runner.errors import Interrupted

    return Interrupted(EXIT_SIGNAL[signum], f"interrupted ({signal.Signals(signum).name}): {what}")


def interrupted(signum: int, what: str, out) -> int:
    """``interruption``'s code, after saying it once on ``out`` through the one mapping of
    exceptions to codes (``runner.ui.exits``): the launch goes on to record how it ended."""
    return exit_code(interruption(signum, what), out)
