"""``build [--flavor F] [--tag T] … [--dry-run]``: the resolved build printed without building;
nothing written."""

from __future__ import annotations

import json

from cli_runner import files_under


def test_a_dry_build_is_the_resolved_build_of_the_flavor(cli, tmp_path):
    before = files_under(tmp_path)
    rc, out, err = cli("--json", "build", "--dry-run", "--flavor", "cuda", "--tag", "my/img:1", "--build-arg", "X=1")
    assert rc == 0, err
    build = json.loads(out)
    assert (build["flavor"], build["tag"], build["dockerfile"]) == ("cuda", "my/img:1", "cuda/Dockerfile")
    assert build["build_args"]["X"] == "1"
    assert files_under(tmp_path) == before


def test_the_global_dry_run_and_the_configs_switch_are_dry_builds(cli, tmp_path):
    (tmp_path / "cfg.yaml").write_text("main:\n  dry_run: true\n")
    for argv in (["--dry-run", "build"], ["--config", str(tmp_path / "cfg.yaml"), "build"]):
        rc, out, err = cli(*argv, "--tag", "my/img:2")
        assert rc == 0 and "tag:        my/img:2" in out, (argv, err)


def test_a_dockerfile_that_is_not_there_is_exit_2(cli, tmp_path):
    rc, _, err = cli("build", "--dry-run", "--file", str(tmp_path / "Nope.Dockerfile"))
    assert rc == 2 and "Nope.Dockerfile" in err, err
