"""The pipeline decides once: the run id before the plan (a job nothing names is named after it, and
its container's run label is it), and whether this is a dry run (the flag, or ``dry_run: true``)."""

from __future__ import annotations

import json


def test_the_default_name_and_the_run_label_derive_from_the_run_id(cli):
    rc, out, err = cli("--json", "up", "--dry-run", "--gpu", "none", "--", "true")
    assert rc == 0, err
    shown = json.loads(out)
    run_id = shown["request"]["ids"]["run"]
    assert shown["name"] == "primus-" + run_id.rsplit("-", 1)[1]
    assert shown["request"]["create"]["Labels"]["io.primus-runner.run"] == run_id
    assert shown["request"]["create"]["Labels"]["io.primus-runner.job"] == shown["name"]


def test_dry_run_true_in_the_config_is_the_flag_for_every_step(cli, tmp_path):
    (tmp_path / ".primus.yaml").write_text("main:\n  dry_run: true\ncontainer:\n  gpu: none\n")
    rc, out, err = cli("--json", "--trust-project", "up", "--", "true")
    assert rc == 0, err
    assert json.loads(out)["request"]["ids"]["run"]  # the dry run's request, shown, not launched
    assert "dry_run is set at" in err
    assert not list(tmp_path.rglob("runs.sqlite*")) and not (tmp_path / ".local" / "state").exists()  # no record written
