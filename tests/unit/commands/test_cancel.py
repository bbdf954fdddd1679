"""``cancel JOB [--dry-run]``: the engine's own ``cancel`` verb; a dry run when asked or when a
launcher section of the config says ``dry_run: true``."""

from __future__ import annotations

import pytest

from runner.cli import main


@pytest.mark.parametrize(("argv", "config", "dry"), [
    ([], None, False),
    (["--dry-run"], None, True),
    ([], "slurm:\n  dry_run: true\n", True),
    ([], "main:\n  dry_run: true\n", True),
    ([], "slurm:\n  dry_run: false\n", False),
])
def test_cancel_runs_the_engines_cancel_dry_or_not(verbs, work, argv, config, dry):
    extra = []
    if config:
        (work / "cfg.yaml").write_text(config)
        extra = ["--config", str(work / "cfg.yaml")]
    assert main([*extra, "cancel", "77", "--engine", "toyverbs", *argv]) == 16
    [(verb, sel)] = verbs
    assert (verb, sel.names, sel.dry_run) == ("cancel", ("77",), dry)


def test_the_global_dry_run_is_a_dry_cancel(verbs):
    assert main(["--dry-run", "cancel", "77", "--engine", "toyverbs"]) == 16
    assert verbs[0][1].dry_run is True
