"""``status JOB``: the engine's own ``status`` verb, given the job id."""

from __future__ import annotations

import pytest

from runner.cli import main


def test_status_runs_the_engines_status_with_the_job(verbs):
    assert main(["status", "4242", "--engine", "toyverbs"]) == 15
    [(verb, sel)] = verbs
    assert verb == "status" and sel.names == ("4242",) and sel.dry_run is False


def test_status_without_a_job_is_a_usage_error(verbs, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["status", "--engine", "toyverbs"])
    assert exit_.value.code == 2
    assert "the following arguments are required: job" in capsys.readouterr().err and verbs == []
