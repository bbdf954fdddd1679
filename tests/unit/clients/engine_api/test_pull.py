"""The pull stream as the daemon (or something in between) writes it: hostile lines and fields."""

from __future__ import annotations

import io

from engine_fixtures import assert_no_leak
from runner.clients.engine_api.chunks import json_messages as _messages
from runner.clients.engine_api.pull import _report
from runner.secrets import Masker
from runner.ui.pull_progress import PlainPullProgress, RichPullProgress


def test_a_non_json_line_does_not_hide_the_error_after_it():
    chunks = [b'{"status":"Pulling from x"}\n', b"<html>proxy says hi</html>\n", b'{"error":"manifest unknown"}\n']
    assert {"error": "manifest unknown"} in list(_messages(chunks))


def test_a_document_cut_across_chunks_still_decodes():
    assert list(_messages([b'{"status":"Down', b'loading","id":"l1"}\n'])) == [{"status": "Downloading", "id": "l1"}]


def test_non_numeric_progress_detail_is_no_internal_error():
    lines: list[str] = []
    progress = PlainPullProgress(Masker(), lines.append)
    progress.begin("img")
    for detail in ({"current": "x", "total": "y"}, {"current": None, "total": [1]}, "nonsense", {"total": float("inf")},
                   {"current": True, "total": -5}):
        _report(progress, {"id": "l1", "status": "Downloading", "progressDetail": detail})
    _report(progress, {"id": "l1", "status": "Pull complete"})
    progress.end(True)
    assert lines[-1].startswith("pulled img: 1 layer(s)")


def test_the_progress_view_masks_a_status_before_changing_its_case():
    from rich.console import Console

    secret = "Canary-MixedCase-Registry-Secret-9F3e"
    progress = RichPullProgress(Masker([secret]), Console(file=io.StringIO(), force_terminal=False))
    progress.begin("img")
    progress.layer("l1", f"Extracting {secret}", 1, 2)
    descriptions = " ".join(task.description for task in progress._progress.tasks)
    progress.end(True)
    assert_no_leak(descriptions, [secret, secret.lower()], "the progress labels")
