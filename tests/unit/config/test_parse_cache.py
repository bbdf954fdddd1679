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


# A file the runner refuses is not remembered: what it says may be a secret value the user is about
# to remove, and a copy in the cache would outlive the fix. Each literal is in the file only (never
# in the environment), so only the cache could have copied it.
REFUSED = {
    "a literal secret in the allowlist": "container:\n  gpu: none\n  options:\n    env: ['HF_TOKEN={literal}']\n",
    "a literal secret in direct.env": "container:\n  gpu: none\ndirect:\n  env: ['WANDB_API_KEY={literal}']\n",
    "a value pasted in place of a name": "container:\n  gpu: none\n  options:\n    env: ['{literal}']\n",
}


@pytest.mark.parametrize("ci", [False, True], ids=["shell", "CI"])
@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_config_leaves_nothing_of_itself_in_the_cache_and_the_fixed_one_is_remembered(tmp_path, case, ci):
    import uuid

    from cli_runner import run_cli

    literal = f"hf-LITERAL-{uuid.uuid4().hex}"
    project = tmp_path / "project"
    project.mkdir()
    config = project / ".primus.yaml"
    config.write_text(REFUSED[case].format(literal=literal))
    env = {"CI": "true"} if ci else {}
    refused = run_cli(project, "plan", "--", "true", home=tmp_path, env=env)
    assert refused.rc == 2 and "literal" not in refused.stdout + refused.stderr.replace("literal value", ""), refused.stderr
    config.write_text("container:\n  gpu: none\n")  # the user's fix
    fixed = run_cli(project, "plan", "--", "true", home=tmp_path, env=env)
    assert fixed.rc == 0, fixed.stderr
    stored = [p for p in tmp_path.rglob("*") if p.is_file() and p != config]
    assert not [str(p) for p in stored if literal.encode() in p.read_bytes()], "the refused file's literal outlived the fix"
    cached = list((tmp_path / ".cache" / "primus-runner" / "parsed").glob("*"))
    assert any(b'"gpu": "none"' in p.read_bytes() and str(config).encode() in p.read_bytes() for p in cached), cached
