"""`git_each` runs its queries side by side: a build's provenance (the remote and the last commit)
waits for the slower git process, not for both in turn."""

from __future__ import annotations

import time

from runner.git import git_each


def test_queries_run_side_by_side_and_answer_in_order(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    # Each query sleeps a second, then prints its last word: in turn they take 2 s, side by side 1 s.
    fake.write_text('#!/bin/sh\nsleep 1\nfor last; do :; done\necho "$last"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    start = time.monotonic()
    answers = git_each(tmp_path, ("remote", "get-url", "origin"), ("log", "-1", "--format=%H", "--", "."))
    took = time.monotonic() - start
    assert answers == ["origin", "."]
    assert took < 1.8, f"{took:.2f} s: the queries ran one after the other"


def test_a_query_outside_a_repository_answers_none(tmp_path):
    assert git_each(tmp_path, ("rev-parse", "HEAD"), ("log", "-1")) == [None, None]
    assert git_each(tmp_path) == []
