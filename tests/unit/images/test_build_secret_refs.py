"""``build`` honours ``secrets:`` references: a context file holding a referenced value is refused,
and ``--secret NAME`` takes its value from a reference."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from engine_fixtures import assert_no_leak
from secret_ref_helpers import file_ref_config


def setup(tmp_path):
    secret, config = file_ref_config(tmp_path, "INDEX_TOKEN", "build-ref")
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM busybox\nRUN --mount=type=secret,id=INDEX_TOKEN true\n")
    return secret, config, context


def build(tmp_path, config, context, *extra):
    return subprocess.run([sys.executable, "-m", "runner", "--config", str(config), "--json", "build", "--file", str(context / "Dockerfile"),
                           "--context", str(context), "--tag", "primus-security/refs:1", "--dry-run", *extra],
                          cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1"}, timeout=120)


def test_a_context_file_holding_a_referenced_value_is_refused(tmp_path):
    secret, config, context = setup(tmp_path)
    (context / "settings.ini").write_text(f"token = {secret}\n")
    result = build(tmp_path, config, context)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "settings.ini" in result.stderr
    assert_no_leak(result.stdout + result.stderr, [secret], "build output")


def test_secret_takes_its_value_from_a_reference(tmp_path):
    secret, config, context = setup(tmp_path)
    result = build(tmp_path, config, context, "--secret", "INDEX_TOKEN")
    assert result.returncode == 0, result.stderr
    assert "INDEX_TOKEN" in json.loads(result.stdout)["secrets"]
    assert_no_leak(result.stdout + result.stderr, [secret], "build output")
