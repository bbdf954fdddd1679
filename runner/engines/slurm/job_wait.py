"""Following a submitted job to its end (``--wait``): its output and a progress line, slurmctld polled with back-off."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from runner.engines.slurm.job_output import Follower, RankLines
from runner.engines.slurm.job_state import Backoff, FILE_POLL, JobState, POLL_FIRST, describe, job_state, progress_text
from runner.ui import Output


class _Progress:
    """A live line on a terminal (rich, transient); one line per change elsewhere (CI logs)."""

    def __init__(self, out: Output, job_id: str):
        self.out, self.job_id, self.live, self.state, self.at, self.base, self.shown = out, job_id, None, None, 0.0, None, ""
        if out.interactive:
            from rich.live import Live
            from rich.text import Text

            self._text = Text
            self.live = Live(Text(""), console=out.rich_console(stderr=True), transient=True, auto_refresh=False)
            self.live.start()

    def change(self, state: JobState) -> None:
        self.state, self.at, self.base = state, time.monotonic(), describe(state)["elapsed"]
        if self.live is None:
            self.out.info(progress_text(self.job_id, state))
        self.tick()

    def tick(self) -> None:
        if self.live is None or self.state is None:
            return
        elapsed = None if self.base is None else self.base + time.monotonic() - self.at
        text = self.out.masker.mask(progress_text(self.job_id, self.state, elapsed))
        if text != self.shown:  # redraw only when the line changes (once a second at most)
            self.shown = text
            self.live.update(self._text(text, style="dim"), refresh=True)

    def write(self, text: str) -> bool:
        """Job output above the live line when stdout is that terminal; False: write it yourself."""
        if self.live is None or not sys.stdout.isatty():
            return False
        self.live.console.print(text, end="", markup=False, highlight=False, soft_wrap=True)
        return True

    def close(self, final: JobState | None) -> None:
        if self.live is not None:
            self.live.stop()
        if final is not None and final.done:
            self.out.info(progress_text(self.job_id, final))


def _exit_files(job_dir: Path, job_id: str) -> int:
    try:
        return sum(1 for _ in job_dir.glob(f"exit-{job_id}-*"))
    except OSError:
        return 0


def wait_for(job_id: str, job_dir: Path, out: Output, nodes: int = 0) -> JobState | None:
    """Follow the job to its end: its output (rank-prefixed, masked again) and its state, polled with back-off."""
    progress = _Progress(out, job_id)
    sink = sys.stderr if out.json_mode else sys.stdout

    def write(text: str) -> None:
        if not progress.write(text):
            sink.write(text)
            sink.flush()

    follower = Follower(job_dir / f"slurm-{job_id}.out", RankLines(out.masker, write, json_lines=False))
    backoff, state, key, next_poll, exits = Backoff(), None, None, 0.0, 0
    try:
        while True:
            now = time.monotonic()
            found = _exit_files(job_dir, job_id)
            if found != exits:  # an agent finished (or a requeued run began): the state changes soon
                exits, next_poll = found, min(next_poll, now + 0.5)
                backoff.delay = POLL_FIRST / 2
            if now >= next_poll:
                state = job_state(job_id)
                if state is None or state.done:
                    break
                d = describe(state)
                changed = (state.slurm_state, d["reason"], d["nodes"], d["restarts"]) != key
                key = (state.slurm_state, d["reason"], d["nodes"], d["restarts"])
                if changed:
                    progress.change(state)
                delay = backoff.next(changed)
                if nodes and exits >= nodes:  # every agent is done: the job ends within moments
                    delay = min(delay, POLL_FIRST)
                next_poll = now + delay
            grew = follower.pump()
            progress.tick()
            if not grew:
                time.sleep(FILE_POLL)
        follower.pump()
        follower.close()
    finally:
        progress.close(state)
    return state
