"""How a pull shows its progress: plain lines per layer state in logs, bars at a terminal, nothing for --json;
every text through the masker. (One line per state, not per byte: tests/unit/clients/test_registry.py.)"""

from __future__ import annotations

import io

from rich.console import Console

from runner.secrets import secret_scope
from runner.ui import Output
from runner.ui.pull_progress import PlainPullProgress, PullProgress, RichPullProgress, progress_for
from secret_ref_helpers import canary


def test_plain_lines_skip_waiting_mask_every_text_and_total_the_layers_downloaded():
    value = canary("pull")
    lines: list[str] = []
    progress = PlainPullProgress(secret_scope(extra=[("REGISTRY_PASSWORD", value)]).masker, lines.append)
    progress.begin(f"reg.example/{value}:1")
    progress.layer("l1", "Waiting", None, None)
    progress.layer("l1", "Downloading", 1_000_000, 3_000_000)
    progress.layer("l2", "Already exists", None, None)
    progress.layer("l1", "Pull complete", None, None)
    progress.status(f"Digest: sha256:{value}")
    progress.end(True)
    assert lines[:5] == ["pulling reg.example/***:1", "  l1: Downloading (3.0 MB)", "  l2: Already exists",
                         "  l1: Pull complete", "  Digest: sha256:***"]
    assert lines[5].startswith("pulled reg.example/***:1: 2 layer(s), 3.0 MB downloaded in ")
    assert not any(value in line for line in lines)


def test_a_failed_pull_says_no_summary_and_a_new_pull_starts_its_own_count():
    lines: list[str] = []
    progress = PlainPullProgress(None, lines.append)
    progress.begin("a:1")
    progress.layer("l1", "Downloading", 5, 10_000_000)
    progress.end(False)
    progress.begin("b:1")
    progress.layer("l1", "Downloading", 5, 10_000_000)  # the same layer again: the new pull's first state
    progress.end(True)
    assert lines[:4] == ["pulling a:1", "  l1: Downloading (10.0 MB)", "pulling b:1", "  l1: Downloading (10.0 MB)"]
    assert lines[4].startswith("pulled b:1: 1 layer(s), 0.0 MB downloaded")


def test_the_bars_count_bytes_per_layer_and_for_the_image():
    progress = RichPullProgress(None, Console(file=io.StringIO(), force_terminal=False))
    progress.begin("img:1")
    progress.layer("l1", "Downloading", 400, 1000)
    progress.layer("l2", "Downloading", 0, 3000)
    progress.layer("l1", "Pull complete", None, None)
    overall, l1, l2 = progress._progress.tasks
    assert (l1.completed, l1.total, l2.completed, l2.total) == (1000, 1000, 0, 3000)
    assert (overall.completed, overall.total) == (1000, 4000)
    progress.end(True)
    progress.layer("l3", "Downloading", 1, 2)  # after the end: nothing to draw on, no error


def test_progress_for_picks_bars_at_a_terminal_lines_elsewhere_and_nothing_for_json_or_quiet(monkeypatch):
    out = Output(color=False)
    assert type(progress_for(out)) is PlainPullProgress
    out.interactive = True
    assert type(progress_for(out)) is RichPullProgress
    assert type(progress_for(Output(json_mode=True, color=False))) is PullProgress
    assert type(progress_for(Output(color=False, quiet=True))) is PullProgress
