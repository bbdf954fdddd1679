"""runner.context: the early secret scope classifies with the one classifier (policy.Classifier)."""

from __future__ import annotations

import uuid

from runner.context import early_scope
from runner.options import Sources
from runner.policy import Classifier

CANARY = f"canary-early-{uuid.uuid4().hex[:12]}"


def _scope(tmp_path, monkeypatch, config: str, **env):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".primus.yaml").write_text(config)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return early_scope(Sources())


def test_a_project_file_cannot_unmark_an_exactly_listed_secret_early(tmp_path, monkeypatch):
    """``!HF_TOKEN`` in ./.primus.yaml: the classifier keeps HF_TOKEN secret (it is listed exactly
    in the defaults), so its value is masked from the first line, as after the config is loaded."""
    scope = _scope(tmp_path, monkeypatch, "passthrough:\n  secrets: ['!HF_TOKEN']\n", HF_TOKEN=CANARY)
    assert "HF_TOKEN" in scope.names()
    assert CANARY not in scope.masker.mask(f"token {CANARY}")


def test_the_early_scope_has_the_config_files_own_patterns(tmp_path, monkeypatch):
    scope = _scope(tmp_path, monkeypatch, "passthrough:\n  secrets: ['MYCORP_*']\n", MYCORP_KEY=CANARY)
    assert "MYCORP_KEY" in scope.names()


def test_a_broken_config_still_gives_the_built_in_secrets(tmp_path, monkeypatch):
    scope = _scope(tmp_path, monkeypatch, "passthrough: [unclosed\n", WANDB_API_KEY=CANARY)
    assert "WANDB_API_KEY" in scope.names()


def test_public_marks_follow_the_classifier_rules():
    c = Classifier.from_entries(["*_TOKEN", "HF_TOKEN", "!HF_TOKEN", "!HF_HUB_DISABLE_IMPLICIT_TOKEN", "!*_TOKEN"])
    assert c.is_secret("HF_TOKEN") and c.is_secret("GH_TOKEN")
    assert not c.is_secret("HF_HUB_DISABLE_IMPLICIT_TOKEN")
