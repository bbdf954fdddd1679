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
