"""The digests of config layers known to pass the schema (runner.config.known_valid): a known layer
is not validated again, nothing but digests is kept, and only a real launch records one."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from runner.config import known_valid, load_config, validate
from runner.config.yamlsource import parse_yaml

REPO = Path(__file__).resolve().parents[3]
CANARY = "kv-canary-7f3a91c2"  # a value only the layer under test holds


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "primus-runner" / "valid-config"


def _layer(text: str):
    return parse_yaml(text, "/work/.primus.yaml")


def test_a_layer_that_passes_is_listed_as_validated_and_is_known_once_remembered(cache):
    layer = _layer(f"container:\n  options:\n    image: {CANARY}\n")
    validated: list[str] = []
    assert validate(layer, validated) == []
    assert validated == [known_valid.digest(known_valid_schema(), layer.data)]
    assert not known_valid.is_known(validated[0])  # validating records nothing
    known_valid.remember(validated)
    assert known_valid.is_known(validated[0])
    again: list[str] = []
    assert validate(layer, again) == [] and again == []  # known: not validated (nor listed) again


def test_a_layer_with_problems_is_never_listed(cache):
    validated: list[str] = []
    problems = validate(_layer("container:\n  optoins: {}\n"), validated)
    assert [p.message for p in problems] == ["unknown key 'optoins' in container"]
    assert validated == []


def test_a_known_digest_cannot_hide_a_changed_file(cache):
    """The digest is of the data: an edit that breaks the file is a new digest and is validated."""
    good = _layer("container:\n  gpu: none\n")
    validated: list[str] = []
    validate(good, validated)
    known_valid.remember(validated)
    problems = validate(_layer("container:\n  gpu: 7\n"), [])
    assert [p.where for p in problems] == ["/work/.primus.yaml:2"]


def test_the_digest_tells_apart_what_the_schema_tells_apart():
    schema = known_valid_schema()
    assert known_valid.digest(schema, {"a": 1}) != known_valid.digest(schema, {"a": "1"})
    assert known_valid.digest(schema, {"a": True}) != known_valid.digest(schema, {"a": 1})
    assert known_valid.digest(schema, {"a": 1}) != known_valid.digest(schema + b" ", {"a": 1})
    assert known_valid.digest(schema, {"a": [1]}) == known_valid.digest(schema, {"a": [1]})


def test_the_cache_holds_empty_files_named_by_digest_and_nothing_of_the_layer(cache):
    layer = _layer(f"passthrough:\n  secrets: [{CANARY.upper().replace('-', '_')}]\ncontainer:\n  options:\n    image: {CANARY}\n")
    validated: list[str] = []
    validate(layer, validated)
    known_valid.remember(validated)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    entries = list(cache.iterdir())
    assert [e.name for e in entries] == validated
    for entry in entries:
        assert entry.stat().st_size == 0 and stat.S_IMODE(entry.stat().st_mode) == 0o600
    tree = [str(p) for p in cache.parent.parent.rglob("*")]
    assert not [p for p in tree if CANARY in p or CANARY.upper().replace("-", "_") in p]


def test_a_digest_in_a_directory_others_can_write_is_not_believed(cache):
    """Another user who can write the cache directory could plant the digest of a file that
    fails the schema; such a directory is not read."""
    layer = _layer("container:\n  gpu: 7\n")
    cache.mkdir(parents=True)
    (cache / known_valid.digest(known_valid_schema(), layer.data)).touch()
    assert validate(layer, []) == []  # this user's own directory: believed
    cache.chmod(0o777)
    assert [p.where for p in validate(layer, [])] == ["/work/.primus.yaml:2"]


def test_a_cache_that_cannot_be_written_costs_only_a_validation(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    known_valid.remember(["0" * 64])  # no exception: the next command validates again
    assert not known_valid.is_known("0" * 64)


def test_load_config_lists_each_validated_layer(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.primus.yaml of the user's
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / ".primus.yaml").write_text("container:\n  gpu: none\n")
    flags = {"container": {"gpu": "rocm"}}
    config = load_config(project_dir=tmp_path / "work", cli_layer=flags, trust_project=True)
    assert [f.kind for f in config.loaded] == ["project"]
    assert len(config.validated) == 3  # built-in defaults, the project's file, the flags
    known_valid.remember(config.validated)
    assert load_config(project_dir=tmp_path / "work", cli_layer=flags, trust_project=True).validated == ()


def _cli(args: list[str], cwd: Path, home: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "SLURM_", "XDG_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "cache"), XDG_STATE_HOME=str(home / "state"), NO_COLOR="1")
    return subprocess.run([sys.executable, *flags, "-P", "-m", "runner", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_only_a_real_launch_records_and_then_plan_needs_no_jsonschema(tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (work / ".primus.yaml").write_text("container:\n  gpu: none\n")
    cache = home / "cache" / "primus-runner" / "valid-config"
    for dry in (["plan", "--", "true"], ["up", "--dry-run", "--engine", "process", "--", "true"],
                ["check", "--", "true"]):
        assert _cli(dry, work, home).returncode == 0
    assert not cache.exists()  # plan, dry runs and check write nothing
    launched = _cli(["up", "--engine", "process", "--", "true"], work, home)
    assert launched.returncode == 0, launched.stderr
    assert len(list(cache.iterdir())) == 2  # the built-in defaults and the project's file
    planned = _cli(["plan", "--", "true"], work, home, "-X", "importtime")
    assert planned.returncode == 0, planned.stderr
    assert "runner.config" in planned.stderr and "jsonschema" not in planned.stderr
    (work / ".primus.yaml").write_text("container:\n  gpu: 7\n")  # a known digest hides no edit
    broken = _cli(["plan", "--", "true"], work, home)
    assert broken.returncode == 2 and ".primus.yaml:2" in broken.stderr


def known_valid_schema() -> bytes:
    from runner.resources import policies_dir

    return (policies_dir() / "config.schema.json").read_bytes()
