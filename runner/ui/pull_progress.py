"""How a pull shows its progress: per-layer bytes and totals on a terminal (rich),
one line per layer state change in CI logs (never one per byte).

Every text goes through the caller's masker: layer ids and statuses hold no
secret, but the daemon's messages quote the image reference, and a reference
may carry anything the user typed.
"""

from __future__ import annotations

import sys
import time
from typing import Callable


def _mb(n: int | float) -> str:
    return f"{n / 1e6:.1f} MB"


class PullProgress:
    """The callbacks ``runner.clients.engine_api.pull.pull`` makes; this base shows nothing."""

    def begin(self, image: str) -> None:
        pass

    def layer(self, layer_id: str, status: str, current: int | None, total: int | None) -> None:
        """A layer's state (``Pulling fs layer``, ``Downloading``, ``Extracting``, ``Pull complete``, ``Already exists`` …)."""

    def status(self, text: str) -> None:
        """An image-level line (``Digest: …``, ``Status: Downloaded newer image …``)."""

    def end(self, ok: bool) -> None:
        pass


class _Totals:
    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}  # layer → download size
        self.done: dict[str, int] = {}  # layer → bytes downloaded
        self.started = time.monotonic()

    def note(self, layer_id: str, status: str, current: int | None, total: int | None) -> None:
        if status == "Downloading" and total:
            self.sizes[layer_id] = total
            self.done[layer_id] = current or 0
        elif status in ("Download complete", "Verifying Checksum", "Extracting", "Pull complete") and layer_id in self.sizes:
            self.done[layer_id] = self.sizes[layer_id]

    @property
    def total(self) -> int:
        return sum(self.sizes.values())

    @property
    def downloaded(self) -> int:
        return sum(self.done.values())


class PlainPullProgress(PullProgress):
    """Plain lines for logs: one per layer state change, and a summary."""

    def __init__(self, masker=None, write: Callable[[str], None] | None = None):
        self._mask = masker.mask if masker else (lambda text: text)
        self._write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self._state: dict[str, str] = {}
        self._totals = _Totals()
        self._image = ""

    def _line(self, text: str) -> None:
        self._write(self._mask(text))

    def begin(self, image: str) -> None:
        self._image = image
        self._totals = _Totals()
        self._state = {}
        self._line(f"pulling {image}")

    def layer(self, layer_id, status, current, total) -> None:
        self._totals.note(layer_id, status, current, total)
        if self._state.get(layer_id) == status:
            return
        self._state[layer_id] = status
        if status == "Waiting":
            return
        size = f" ({_mb(total)})" if status == "Downloading" and total else ""
        self._line(f"  {layer_id}: {status}{size}")

    def status(self, text: str) -> None:
        self._line(f"  {text}")

    def end(self, ok: bool) -> None:
        if ok:
            took = time.monotonic() - self._totals.started
            self._line(f"pulled {self._image}: {len(self._state)} layer(s), {_mb(self._totals.downloaded)} downloaded in {took:.1f}s")


class RichPullProgress(PullProgress):
    """A bar per layer (bytes downloaded, then extracted) and one for the whole image."""

    def __init__(self, masker=None, console=None):
        self._mask = masker.mask if masker else (lambda text: text)
        self._console = console
        self._progress = None
        self._tasks: dict[str, int] = {}
        self._totals = _Totals()

    def begin(self, image: str) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TransferSpeedColumn

        self._totals = _Totals()
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeElapsedColumn(),
            console=self._console, transient=True,
        )
        self._overall = self._progress.add_task(self._mask(f"[bold]pulling {image}"), total=None)
        self._progress.start()

    def layer(self, layer_id, status, current, total) -> None:
        if self._progress is None:
            return
        self._totals.note(layer_id, status, current, total)
        task = self._tasks.get(layer_id)
        if task is None:
            task = self._tasks[layer_id] = self._progress.add_task("", total=None)
        from rich.markup import escape

        label = escape(self._mask(f"  {layer_id} {status}").lower())  # masked before anything changes its case
        if status in ("Downloading", "Extracting") and total:
            self._progress.update(task, description=label, completed=current or 0, total=total)
        elif status in ("Pull complete", "Already exists", "Download complete"):
            size = self._totals.sizes.get(layer_id)
            self._progress.update(task, description=label, completed=size or 1, total=size or 1)
        else:
            self._progress.update(task, description=label)
        self._progress.update(self._overall, completed=self._totals.downloaded, total=self._totals.total or None)

    def status(self, text: str) -> None:
        if self._progress is not None:
            self._progress.console.print(self._mask(text), markup=False, highlight=False)

    def end(self, ok: bool) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


class _Both:
    """Two maskers in a row: the command's scope and the pull's own credential (not in the environment
    when it comes from a Docker config or a credential helper)."""

    def __init__(self, first, second):
        self._first, self._second = first, second

    def mask(self, text: str) -> str:
        return self._second.mask(self._first.mask(text))


def progress_for(out, credential=None) -> PullProgress:
    """The renderer for a ``runner.ui.Output``: rich at a terminal, plain lines otherwise (CI, pipes), none for --json.

    ``credential``: the pull's registry credential, masked too wherever it came from.
    """
    if getattr(out, "json_mode", False) or getattr(out, "quiet", False):
        return PullProgress()
    masker = out.masker
    if credential is not None:
        from runner.secrets import secret_scope

        own = secret_scope(extra=[(f"registry password ({credential.registry})", credential.password)]).masker
        masker = _Both(own, masker)
    if getattr(out, "interactive", False):
        return RichPullProgress(masker, out.rich_console(stderr=True))
    return PlainPullProgress(masker, out.info)
