"""What `build` loads: the image modules and the engine's client, none of a launch's (the launch type, GPU
discovery, the trackers, planning, the engines). A no-change rebuild is mostly the runner's start-up."""

from __future__ import annotations

import subprocess
import sys

from cli_runner import user_env

NOT_IN_BUILD = ("runner.launch_plan", "runner.gpus", "runner.trackers", "runner.plan", "runner.engines", "runner.session", "runner.runs")

_DRIVER = ("import atexit, runpy, sys\n"
           "atexit.register(lambda: sys.stderr.write('modules: ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
           "sys.argv = ['runner', *sys.argv[1:]]\n"
           "runpy.run_module('runner', run_name='__main__', alter_sys=True)\n")


def test_a_build_loads_none_of_a_launch(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM primus-test/busybox:latest\nRUN --mount=type=cache,target=/cache true\n")
    env = user_env(tmp_path, {"DOCKER_HOST": "unix:///nonexistent.sock", "NO_COLOR": "1"})
    done = subprocess.run([sys.executable, "-P", "-c", _DRIVER, "build", "--file", "Dockerfile", "--tag", "primus-test/imports:unit"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "not reachable" in done.stderr, done.stderr[-2000:]  # it got as far as the engine
    names = {n for line in done.stderr.splitlines() if line.startswith("modules: ") for n in line.split()[1:]}
    assert "runner.images.recipe" in names and "runner.clients.engine_api.api" in names  # the list is read
    assert sorted(n for n in names if n.startswith(NOT_IN_BUILD)) == []
