"""The schema's ``trackers`` section is what the registry declares, and every registered
tracker is a complete plug-in."""

from __future__ import annotations

import dataclasses

import pytest

from runner.config import untrusted
from runner.policy import Classifier
from runner.trackers import TRACKERS, schema, tracker
from runner.trackers.config import declared_settings


def test_the_schema_file_is_what_the_registry_generates():
    text = schema.schema_path().read_text(encoding="utf-8")
    assert schema.render(text) == text, "run: python -m runner.trackers.schema --write"
    assert schema.main([]) == 0


def test_the_check_names_the_command_that_fixes_a_stale_schema(monkeypatch, capsys):
    wandb = tracker("wandb")
    extra = {**wandb.SETTINGS.keys, "wandb_notes": {"type": "string"}}
    monkeypatch.setattr(wandb, "SETTINGS", dataclasses.replace(wandb.SETTINGS, keys=extra))
    assert schema.main([]) == 1
    assert "python -m runner.trackers.schema --write" in capsys.readouterr().out


@pytest.mark.parametrize("name", list(TRACKERS))
def test_every_registered_tracker_is_a_whole_plug_in(name):
    module = tracker(name)
    assert module.NAME == module.SETTINGS.name == name
    assert isinstance(module.RUN_ENV, tuple)
    for verb in ("prefetch", "check", "begin"):
        assert callable(getattr(module, verb)), verb
    assert set(module.SETTINGS.secrets) <= set(module.SETTINGS.names)


def test_a_key_two_trackers_declare_is_refused(monkeypatch):
    mlflow = tracker("mlflow")
    stolen = {**mlflow.SETTINGS.keys, "wandb_project": {"type": "string"}}
    monkeypatch.setattr(mlflow, "SETTINGS", dataclasses.replace(mlflow.SETTINGS, keys=stolen))
    with pytest.raises(ValueError, match="wandb_project"):
        schema.section()


def test_declared_credentials_are_masked_by_the_built_in_policy(work):
    from runner.config import load_config

    classifier = Classifier.from_config(load_config(user_files=False))
    for declared in declared_settings():
        for name in declared.secrets:
            assert classifier.is_secret(name), (declared.name, name)


def test_every_tracker_endpoint_is_guarded_by_the_trust_check():
    untrusted.endpoint_names.cache_clear()
    for declared in declared_settings():
        assert set(declared.endpoints) <= untrusted.endpoint_names(), declared.name
    assert {"HF_ENDPOINT", "MLFLOW_TRACKING_URI", "WANDB_BASE_URL", "DATABRICKS_HOST"} <= untrusted.endpoint_names()
