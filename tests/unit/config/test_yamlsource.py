"""Reading YAML, bounded and located: every key and item has its file:line; duplicates, deep nesting,
alias and merge bombs (by nodes or by bytes: few nodes, each an alias of one big string) are refused."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from runner.config.yamlsource import MAX_BYTES, MAX_DEPTH, MAX_NODES, dotted, file_mode_warning, parse_yaml, read_text
from runner.errors import ConfigError


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # 2 GiB: the old code died here with MemoryError, exit 3


def test_a_byte_amplifying_alias_bomb_is_refused_with_file_line(work):
    aliases = 95_000
    text = "x-big: &a \"" + "A" * 600_000 + "\"\nx-list: [" + ",".join(["*a"] * aliases) + "]\n"
    assert len(text) < MAX_BYTES and aliases < MAX_NODES  # under the size and node limits: only its bytes are a bomb
    (work / ".primus.yaml").write_text(text)
    result = subprocess.run([sys.executable, "-m", "runner", "plan", "--", "true"], cwd=work, capture_output=True, text=True,
                            env={**os.environ, "HOME": str(work), "NO_COLOR": "1"}, timeout=120, preexec_fn=limit_memory)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "alias bomb" in result.stderr and ".primus.yaml:" in result.stderr
    assert "MemoryError" not in result.stderr


def test_every_key_and_item_is_located_and_a_missing_path_falls_back_to_its_nearest_parent():
    doc = parse_yaml("container:\n  image: img:1\n  options:\n    env:\n      - A=1\n      - B\n", "cfg.yaml")
    assert doc.data == {"container": {"image": "img:1", "options": {"env": ["A=1", "B"]}}}
    assert doc.where(("container", "image")) == "cfg.yaml:2"
    assert doc.where(("container", "options", "env", 1)) == "cfg.yaml:6"
    assert doc.where(("container", "options", "env", 7)) == "cfg.yaml:4"
    assert parse_yaml("", "empty.yaml").data == {}


def _problem(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "cfg.yaml")
    return info.value.message


def test_a_duplicate_key_a_non_string_key_and_malformed_yaml_name_their_line():
    assert _problem("a: 1\nb: 2\na: 3\n") == "cfg.yaml:3: duplicate key 'a'"
    assert _problem("? [x]\n: 1\n") == "cfg.yaml:1: mapping keys must be plain strings"
    assert _problem("a: [1, 2\nb: 3\n").startswith("cfg.yaml:")


def test_nesting_deeper_than_the_limit_is_refused():
    assert "nested deeper than" in _problem("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5))


def test_merge_keys_written_keys_win_and_the_earlier_merged_mapping_wins():
    doc = parse_yaml("a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc:\n  <<: [*a, *b]\n  x: 0\n", "cfg.yaml")
    assert doc.data["c"] == {"x": 0, "y": 1, "z": 2}
    assert "a merge key (<<) takes a mapping" in _problem("a: &a [1]\nc:\n  <<: *a\n")


def test_a_merge_bomb_is_refused_by_its_expansion():
    lines = ["l0: &l0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}"]
    lines += [f"l{i}: &l{i} {{" + ", ".join(f"k{j}: {{<<: *l{i - 1}}}" for j in range(10)) + "}" for i in range(1, 7)]
    assert "alias bomb" in _problem("\n".join(lines) + "\n")


def test_a_bad_scalar_tag_never_quotes_the_value():
    message = _problem("when: !!timestamp canary-not-a-date-123\n")
    assert message == "cfg.yaml:1: cannot read the value (tag timestamp)"


def test_read_text_refuses_binary_non_utf8_big_and_missing_files_naming_the_line(tmp_path):
    cases = {"bin": b"ok\nx\x00y\n", "latin": b"a\nb\n\xe9\n", "big": b"x" * (MAX_BYTES + 1)}
    says = {"bin": "cfg.yaml:2: config file is binary", "latin": "cfg.yaml:3: config file is not valid UTF-8",
            "big": "is 1,048,577 bytes; the limit is 1,048,576"}
    for name, raw in cases.items():
        path = tmp_path / name / "cfg.yaml"
        path.parent.mkdir()
        path.write_bytes(raw)
        with pytest.raises(ConfigError) as info:
            read_text(path, "config file")
        assert says[name] in info.value.message, info.value.message
    with pytest.raises(ConfigError, match="does not exist"):
        read_text(tmp_path / "missing.yaml", "config file")


def test_dotted_paths_hide_keys_shaped_like_tokens_and_modes_warn(tmp_path):
    assert dotted(("container", "options", "env", 2)) == "container.options.env[2]"
    assert dotted(("env", "ghp_0123456789abcdef")) == "env.<key not shown>"
    assert dotted(()) == "(top level)"
    path = tmp_path / ".env"
    path.write_text("A=1\n")
    path.chmod(0o644)
    assert file_mode_warning(path) == f"{path} is readable by group/others (mode 0o644); run: chmod 600 {path}"
    path.chmod(0o600)
    assert file_mode_warning(path) is None
