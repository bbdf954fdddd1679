"""The shipped data directories: found at the repository root or in the installed package, else a clear error."""

from __future__ import annotations

import pytest

from runner import resources


def test_policies_and_images_are_directories_holding_the_shipped_data():
    assert resources.policies_dir().is_dir() and any(resources.policies_dir().iterdir())
    assert resources.images_dir().is_dir() and any(resources.images_dir().iterdir())


def test_the_installed_packages_copy_is_preferred_and_a_missing_one_is_named(monkeypatch, tmp_path):
    package = tmp_path / "site" / "runner"
    (package / "_policies").mkdir(parents=True)
    (tmp_path / "site" / "policies").mkdir()
    monkeypatch.setattr(resources, "_PACKAGE", package)
    assert resources.policies_dir() == package / "_policies"
    (package / "_policies").rmdir()
    assert resources.policies_dir() == tmp_path / "site" / "policies"
    with pytest.raises(FileNotFoundError, match="primus-runner's images/ directory is missing"):
        resources.images_dir()
