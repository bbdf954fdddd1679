"""The run's store writes, off the launch's critical path: one daemon thread owns the connection.

The launch hands the writer a snapshot of the record (its JSON text, taken on the
launch's thread, so a ``Secret`` still refuses to serialise there) and goes on; the
thread imports sqlite3, opens the store, masks and commits. Only the end of a run
waits (``flush``), for one commit.

The thread starts once the job has started (``go``), or at the first ``flush``
(the runner's end, when the job never started): while the engine creates and
starts the container, the launch's own thread runs Python between its engine
calls, and a second thread running Python would take the GIL from it in 5 ms
slices; once the job runs, the launch's thread waits on the engine. The thread is
started without waiting for it to be scheduled (``threading.Thread.start`` waits,
which on a busy host costs milliseconds).

The thread never ends and its connection is never closed: the last connection to
close a WAL database checkpoints it with two fsyncs (tens of ms on a busy disk),
which would sit between the job's end and the runner's exit. An unclosed
connection leaves the WAL as a runner killed after its commit does, which SQLite
recovers from by design; the writer checkpoints (passively) once the WAL has
grown, while the next launch's engine is still creating its container, and
``runs`` closes its own connection, which checkpoints.
"""

from __future__ import annotations

import _thread
import json
import queue
from typing import Callable

WAL_CHECKPOINT_BYTES = 4 << 20  # SQLite's own default (1000 pages); past this, the first write of a launch checkpoints (passively)


class Writer:
    def __init__(self, warn: Callable[[object], None], masker=None):
        self.warn, self.masker = warn, masker
        self.store = None
        self.fill: dict = {}  # fields learnt on the thread (the image digest), added to every later write
        self._queue: queue.Queue = queue.Queue()
        self._started = False
        self._broken = False  # the store could not be opened: one warning, nothing more is tried
        self.stored = False  # the last write was committed
        self._checked = False

    def put(self, text: str) -> None:
        """Write the record whose JSON is ``text``, soon."""
        self.submit(lambda: self._put(text))

    def submit(self, job: Callable[[], None]) -> None:
        self._queue.put(job)

    def go(self) -> None:
        """The job runs: the writes handed over so far, and every later one, go ahead now."""
        if not self._started:
            self._started = True
            _thread.start_new_thread(self._loop, ())  # never joined: the process does not wait for it at exit

    def flush(self) -> None:
        """Wait until every write handed over so far is committed (or has failed)."""
        self.go()
        self._queue.join()

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            try:
                job()
            except Exception as exc:  # noqa: BLE001 - a record must never stop a launch
                self.warn(exc)
            finally:
                self._queue.task_done()

    def _put(self, text: str) -> None:
        from runner.runs.store import Store, StoreError

        if self._broken:
            return
        try:
            if self.store is None:
                self.store = Store.open(launch=True)
            doc = json.loads(text)
            doc.update({k: v for k, v in self.fill.items() if doc.get(k) is None})
            if self.masker is not None:
                doc = json.loads(self.masker.mask(json.dumps(doc, sort_keys=True)))
            self.store.put(doc)
        except StoreError as exc:
            self._broken = self._broken or self.store is None
            self.stored = False
            self.warn(exc)
            return
        self.stored = True
        if not self._checked:
            self._checked = True
            self.store.checkpoint_if_over(WAL_CHECKPOINT_BYTES)
