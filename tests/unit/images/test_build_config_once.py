"""`build` loads its config once: the launcher's `dry_run` switch is read from the config the build
loaded, with the command's own trust (`--trust-project`), not from a second load of its own."""

from __future__ import annotations

import json
from pathlib import Path

import runner.config
import runner.context
from cli_runner import run_cli
from runner.options import BuildOptions, Sources
from runner.ui import Output


def _project(root: Path, config: str) -> Path:
    (root / "home").mkdir()
    (root / "Dockerfile").write_text("FROM primus-test/busybox:latest\n")
    (root / ".primus.yaml").write_text(config)
    return root


def _run(cwd: Path, *args: str):
    return run_cli(cwd, *args, home=cwd / "home", env={"XDG_CACHE_HOME": str(cwd / "cache"), "DOCKER_HOST": "unix:///nonexistent.sock"},
                   timeout=60)


def test_trust_project_lets_a_build_past_its_config(tmp_path):
    """An untrusted project file asking for `cache.dir`, trusted for this command by --trust-project: the build
    goes on to the engine (absent here: exit 1), as `plan --trust-project` does; it is not refused (exit 2)."""
    cwd = _project(tmp_path, f"cache:\n  dir: {tmp_path / 'cache-dir'}\n")
    refused = _run(cwd, "build", "--file", "Dockerfile", "--tag", "primus-test/once:unit")
    assert refused.returncode == 2 and "cache.dir" in refused.stderr, refused.stderr  # untrusted: the ask stops it
    trusted = _run(cwd, "--trust-project", "build", "--file", "Dockerfile", "--tag", "primus-test/once:unit")
    assert trusted.returncode == 1 and "not reachable" in trusted.stderr, trusted.stderr


def test_dry_run_true_in_the_config_is_a_dry_run_of_the_build(tmp_path):
    cwd = _project(tmp_path, "main:\n  dry_run: true\n")
    proc = _run(cwd, "--json", "build", "--file", "Dockerfile", "--tag", "primus-test/once:unit")
    assert proc.returncode == 0, proc.stderr  # DOCKER_HOST points nowhere: nothing was contacted
    assert json.loads(proc.stdout)["tag"] == "primus-test/once:unit"


def test_a_build_loads_its_config_once(work, monkeypatch):
    _project(work, "main:\n  dry_run: true\n")
    loads = []
    original = runner.config.load_config

    def counted(*args, **kwargs):
        loads.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(runner.config, "load_config", counted)
    monkeypatch.setattr(runner.context, "load_config", counted)  # it imports the name
    from runner.commands import build

    out = Output(color=False)
    assert build.run(out, options=BuildOptions(sources=Sources(), file="Dockerfile", tag="primus-test/once:unit")) == 0
    assert len(loads) == 1, loads
