"""Every schema problem of a file in one run, each with its file:line, sorted by line, unknown keys
with their did-you-mean, through the CLI (`plan` and `check` alike)."""

from __future__ import annotations

import pytest

from cli_runner import run_cli

NO_DOCKER = "unix:///nonexistent/docker.sock"  # check's engine answer is not what these tests are about

MISTAKES = """container:
  gpu: none
  options:
    devices: [/dev/null]
    shm_size: 1g
    workdri: /x
    memory: [5]
trackerz: {}
"""


def _problem_lines(stderr: str) -> list[str]:
    return [line.strip().removeprefix("error: ") for line in stderr.splitlines() if "extra.yaml:" in line]


@pytest.mark.parametrize("command", [("plan", "--", "true"), ("check",)], ids=["plan", "check"])
def test_every_problem_of_a_file_with_its_line(tmp_path, command):
    (tmp_path / "extra.yaml").write_text(MISTAKES)
    result = run_cli(tmp_path, "--config", "extra.yaml", *command, env={"DOCKER_HOST": NO_DOCKER})
    assert result.returncode == 2, result.stderr
    assert _problem_lines(result.stderr) == [
        "extra.yaml:4: unknown key 'devices' in container.options (did you mean 'device'?)",
        "extra.yaml:5: unknown key 'shm_size' in container.options (did you mean 'shm-size'?)",
        "extra.yaml:6: unknown key 'workdri' in container.options (did you mean 'workdir'?)",
        "extra.yaml:7: container.options.memory: a list is not valid here; expected a size such as 256g, 512m or a number of bytes",
        "extra.yaml:8: unknown key 'trackerz' in (top level) (did you mean 'trackers'?)",
    ]
