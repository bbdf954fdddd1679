"""`debug: true` in any launcher section acts as --debug; `dry_run: true` as --dry-run."""

from __future__ import annotations

import json

import pytest

from runner.config import load_config
from runner.config.switches import LAUNCHER_SECTIONS, launcher_switch

BASE = "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n"


def _with(section: str, key: str) -> str:
    if section == "container":
        return BASE.replace("container:\n", f"container:\n  {key}: true\n", 1)
    return BASE + f"{section}:\n  {key}: true\n"


@pytest.mark.parametrize("section", LAUNCHER_SECTIONS)
@pytest.mark.parametrize("key", ["dry_run", "debug"])
def test_each_launcher_section_sets_the_switch(work, section, key):
    (work / ".primus.yaml").write_text(_with(section, key))
    config = load_config()
    assert launcher_switch(config, key) and not launcher_switch(config, "dry_run" if key == "debug" else "debug")


@pytest.mark.parametrize("section", LAUNCHER_SECTIONS)
def test_debug_in_a_section_acts_as_the_debug_flag(work, section, cli):
    (work / ".primus.yaml").write_text(_with(section, "debug"))
    run = lambda *a: cli(*a, cwd=work, env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"}, timeout=60)  # noqa: E731
    from_config = json.loads(run("--json", "plan", "--", "true").stdout)
    assert from_config["env"]["PRIMUS_LOG_LEVEL"] == "DEBUG"
    (work / ".primus.yaml").write_text(BASE)
    assert "PRIMUS_LOG_LEVEL" not in json.loads(run("--json", "plan", "--", "true").stdout)["env"]
    assert json.loads(run("--json", "--debug", "plan", "--", "true").stdout)["env"]["PRIMUS_LOG_LEVEL"] == "DEBUG"
