"""``cache.dir`` is a path with one placeholder, ``{uid}``, never a template: ``str.format``
would evaluate ``{uid.__class__.__mro__}`` written in a config."""

from __future__ import annotations

import json
import os

from cli_runner import run_cli


def _cache_mount(tmp_path, directory: str) -> str:
    (tmp_path / "cfg.yaml").write_text(f"container:\n  gpu: none\ncache:\n  dir: '{directory}'\n")
    result = run_cli(tmp_path, "--config", "cfg.yaml", "--json", "plan", "--", "true")
    assert result.returncode == 0, result.stderr
    return next(m["source"] for m in json.loads(result.stdout)["mounts"] if m["target"] == "/primus-runner/cache")


def test_a_format_expression_in_cache_dir_is_not_evaluated(tmp_path):
    source = _cache_mount(tmp_path, str(tmp_path / "c-{uid.__class__.__mro__}"))
    assert source.startswith(str(tmp_path / "c-{uid.__class__.__mro__}") + "/"), source
    assert "<class" not in source


def test_uid_is_still_replaced(tmp_path):
    assert _cache_mount(tmp_path, str(tmp_path / "c-{uid}")).startswith(str(tmp_path / f"c-{os.getuid()}") + "/")
