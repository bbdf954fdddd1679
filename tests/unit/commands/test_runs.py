"""``runs [list|show RUN|gc --older-than D]``: the run store's list, one record, and its garbage collection."""

from __future__ import annotations

import json


def _one_run(cli, tmp_path) -> str:
    rc, out, err = cli("--json", "up", "--engine", "process", "--name", "rec-job", "--", "sh", "-c", "exit 5")
    assert rc == 5, err
    [run] = json.loads(cli("--json", "runs").stdout)
    return run["id"]


def test_list_show_and_gc_see_the_same_run(cli, tmp_path):
    run_id = _one_run(cli, tmp_path)
    listed = json.loads(cli("--json", "runs", "--name", "rec-job").stdout)
    assert [(r["id"], r["name"], r["exit_code"], r["engine"]) for r in listed] == [(run_id, "rec-job", 5, "process")]
    assert json.loads(cli("--json", "runs", "--name", "other").stdout) == []
    rc, out, _ = cli("runs", "show", run_id)
    assert rc == 0 and run_id in out and "exit_code     5" in out
    rc, _, err = cli("runs", "gc", "--older-than", "0s", "--dry-run")  # every run started before now
    assert rc == 0 and f"would remove run {run_id}" in err
    assert [r["id"] for r in json.loads(cli("--json", "runs").stdout)] == [run_id]  # a dry run removes nothing


def test_show_of_an_unknown_run_is_an_error(cli):
    rc, _, err = cli("runs", "show", "no-such-run")
    assert rc == 2 and "no-such-run" in err, err
