"""``plan [LAUNCH] -- CMD…``: ``up --dry-run``, compact: the resolved launch printed, nothing started,
nothing written (not under HOME, the XDG directories or the current directory)."""

from __future__ import annotations

import json

from cli_runner import files_under

CONFIG = "container:\n  gpu: none\n  options:\n    image: busybox:1\n"


def test_plan_prints_the_launch_and_runs_and_writes_nothing(cli, tmp_path):
    (tmp_path / ".primus.yaml").write_text(CONFIG)
    before = files_under(tmp_path)
    rc, out, err = cli("plan", "--engine", "process", "--", "sh", "-c", "touch made-by-the-job")
    assert rc == 0, err
    assert "touch made-by-the-job" in out
    assert files_under(tmp_path) == before  # no job ran (it would touch the file), no run record, no cache


def test_plan_json_is_the_plan_of_the_container_launch(cli, tmp_path):
    (tmp_path / ".primus.yaml").write_text(CONFIG)
    before = files_under(tmp_path)
    rc, out, err = cli("--json", "plan", "--name", "planned-1", "--", "python", "train.py")
    assert rc == 0, err
    plan = json.loads(out)
    assert (plan["image"], plan["command"], plan["name"], plan["gpu"]) == ("busybox:1", ["python", "train.py"], "planned-1", "none")
    assert files_under(tmp_path) == before


def test_plan_with_a_config_problem_is_exit_2_and_writes_nothing(cli, tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: sideways\n")
    before = files_under(tmp_path)
    rc, _, err = cli("plan", "--", "true")
    assert rc == 2 and ".primus.yaml:2: container.gpu: the value is not one of: rocm, cuda, none" in err, err
    assert files_under(tmp_path) == before
