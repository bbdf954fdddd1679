"""runner.context: a command's config, env file and secret scope (its references resolved), and the early
scope, which classifies with the one classifier (policy.Classifier)."""

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


class _Out:
    def __init__(self):
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def test_load_context_resolves_secret_references_into_the_scope_and_a_failing_one_only_warns(tmp_path, monkeypatch):
    from runner.context import load_context
    from secret_ref_helpers import secret_file

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    secret_file(tmp_path / "token", CANARY + "\n")
    (tmp_path / "mine.yaml").write_text(f"secrets:\n  STORED_VALUE: file:{tmp_path / 'token'}\n"
                                        f"  GONE_VALUE: file:{tmp_path / 'missing'}\n")
    out = _Out()
    context = load_context(Sources(str(tmp_path / "mine.yaml"), None), out=out)
    assert context.scope.masker.mask(f"x {CANARY} y") == "x *** y" and "STORED_VALUE" in context.scope.names()
    assert out.warnings == [f"secret GONE_VALUE (file:{tmp_path / 'missing'}) could not be resolved: no such file"]
    unresolved = load_context(Sources(str(tmp_path / "mine.yaml"), None))  # without ``out``: nothing is fetched
    assert "STORED_VALUE" not in unresolved.scope.names()


def test_a_malformed_secret_reference_stops_the_command(tmp_path, monkeypatch):
    import pytest

    from runner.context import load_context
    from runner.errors import ConfigError

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text(f"secrets:\n  HF_TOKEN: {CANARY}\n")
    with pytest.raises(ConfigError) as info:
        load_context(Sources(str(tmp_path / "mine.yaml"), None), out=_Out())
    assert "not a secret reference" in info.value.message and CANARY not in info.value.message


def test_the_container_engine_is_the_configs_or_auto(tmp_path, monkeypatch):
    from runner.context import container_engine

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert container_engine(Sources()) == "auto"
    (tmp_path / "mine.yaml").write_text("container:\n  engine: podman\n")
    assert container_engine(Sources(str(tmp_path / "mine.yaml"))) == "podman"
