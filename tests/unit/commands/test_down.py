"""``down [NAME…] [--all] [--dry-run]``: the engine's own ``down`` verb, dry when asked or when the
config's launcher section says so."""

from __future__ import annotations

import pytest

from runner.cli import main


def test_down_runs_the_engines_down_with_the_names(verbs):
    assert main(["down", "job-a", "job-b", "--engine", "toyverbs"]) == 13
    [(verb, sel)] = verbs
    assert (verb, sel.names, sel.all, sel.dry_run) == ("down", ("job-a", "job-b"), False, False)


@pytest.mark.parametrize("argv", [["down", "--all", "--dry-run"], ["--dry-run", "down", "--all"]])
def test_a_dry_down_says_so_to_the_verb(verbs, argv):
    assert main([*argv, "--engine", "toyverbs"]) == 13
    [(verb, sel)] = verbs
    assert (verb, sel.all, sel.dry_run) == ("down", True, True)


def test_the_configs_dry_run_switch_makes_down_dry(verbs, work):
    (work / "cfg.yaml").write_text("container:\n  dry_run: true\n")
    assert main(["--config", str(work / "cfg.yaml"), "down", "x", "--engine", "toyverbs"]) == 13
    assert verbs[0][1].dry_run is True


def _detached_run(work, name: str) -> None:
    import os

    from ux_helpers import NO_DOCKER

    from runner.runs.store import Store

    store = Store.open()
    store.put({"id": "20260101-000001-dddddd", "uid": os.getuid(), "user": "you", "host": "h", "engine": "docker", "name": name,
               "state": "running", "detached": True, "container_id": "c0ffee", "engine_host": NO_DOCKER, "cwd": str(work),
               "started_ts": 1.0})
    store.close()


def test_down_records_a_detached_runs_end_first_and_a_dry_down_does_not(verbs, work, capsys):
    # the run's engine does not answer here: the attempt to record its end is seen as down's warning
    _detached_run(work, "bg-job")
    assert main(["down", "bg-job", "--dry-run", "--engine", "toyverbs"]) == 13
    assert "could not be recorded before down" not in capsys.readouterr().err
    assert main(["down", "bg-job", "--engine", "toyverbs"]) == 13
    assert "the end of run 20260101-000001-dddddd could not be recorded before down" in capsys.readouterr().err
    assert [verb for verb, _ in verbs] == ["down", "down"]  # down goes on
