"""Config files parsed once per text: the same text is read back from the cache without parsing,
a changed one is parsed again, and a failed parse is never remembered (counted: parser calls)."""

from __future__ import annotations

import pytest

from runner.config import yamlsource
from runner.errors import ConfigError


@pytest.fixture
def parses(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls: list[str] = []
    real = yamlsource.parse_yaml

    def counting(text, source):
        calls.append(source)
        return real(text, source)

    monkeypatch.setattr(yamlsource, "parse_yaml", counting)
    return calls


def test_the_same_text_is_parsed_once_and_read_back_exactly(parses):
    text = "container:\n  gpu: none\n  options:\n    env: [A, 'B=1']\n    cpus: 1.5\n    privileged: false\nx: null\n"
    first = yamlsource.parse_file(text, "/p/.primus.yaml")
    again = yamlsource.parse_file(text, "/p/.primus.yaml")
    assert parses == ["/p/.primus.yaml"]
    assert (again.data, again.lines, again.digest) == (first.data, first.lines, first.digest)
    assert again.where(("container", "options", "env", 1)) == "/p/.primus.yaml:4"


def test_a_changed_file_or_another_path_is_parsed_again(parses):
    yamlsource.parse_file("a: 1\n", "/p/one.yaml")
    assert yamlsource.parse_file("a: 2\n", "/p/one.yaml").data == {"a": 2}
    assert yamlsource.parse_file("a: 1\n", "/q/one.yaml").lines[("a",)] == "/q/one.yaml:1"  # lines name their file
    assert parses == ["/p/one.yaml", "/p/one.yaml", "/q/one.yaml"]


def test_a_failed_parse_is_reported_every_time(parses):
    for _ in range(2):
        with pytest.raises(ConfigError):
            yamlsource.parse_file("a: [1,\n", "/p/bad.yaml")
    assert len(parses) == 2


def test_what_json_cannot_give_back_is_not_stored(parses):
    text = "when: 2026-01-01\n1: one\n"  # a date and an integer key
    assert yamlsource.parse_file(text, "/p/t.yaml").data == yamlsource.parse_file(text, "/p/t.yaml").data
    assert len(parses) == 2
