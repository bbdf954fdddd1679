"""Variables that configure the runner itself (``PRIMUS_RUNNER_*``) never reach a job,
whatever the prefix rules say: ``PRIMUS_`` is a default prefix, and listing one by name
is a config error like any denied name."""

from __future__ import annotations

import json

from cli_runner import run_cli


def test_runner_variables_are_never_forwarded_by_a_prefix(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n")
    result = run_cli(tmp_path, "--json", "plan", "--", "true",
                     env={"PRIMUS_RUNNER_TRUST_PROJECT": "1", "PRIMUS_RUNNER_ADD_MASK": "1", "PRIMUS_MODEL": "llama"})
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    forwarded = set(doc["env"]) | set(doc["secrets"])
    assert "PRIMUS_MODEL" in forwarded  # the prefix rule itself still works
    assert not {n for n in forwarded if n.startswith("PRIMUS_RUNNER_")}, forwarded


def test_listing_a_runner_variable_is_refused(tmp_path):
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    env: [PRIMUS_RUNNER_TRUST_PROJECT]\n")
    result = run_cli(tmp_path, "plan", "--", "true", env={"PRIMUS_RUNNER_TRUST_PROJECT": "1"})
    assert result.returncode == 2 and "PRIMUS_RUNNER_TRUST_PROJECT" in result.stderr, result.stderr
