"""The store registry (runner.secrets.refs.STORES): a scheme is a registered store, nothing else;
a store is one module and one line, so one registered from here is parsed and resolved like the
built-in ones, and an unknown scheme is a usage error (exit 2) that names every known one."""

from __future__ import annotations

import sys

from cli_runner import run_in_clone
from engine_fixtures import sha
from runner.errors import Problem
from runner.secrets.refs import STORES
from runner.secrets.refs.grammar import SecretRef, parse_ref
from runner.secrets.refs.resolve import resolve
from secret_ref_helpers import canary, no_env

STORE = '''
FORM = "reversed:text"


def target_problem(target):
    return None if target.isalnum() else "letters and digits only"


def fetch(ref, lookup, timeout):
    return ref.target[::-1]
'''


def test_a_store_is_one_module_and_one_registry_line(tmp_path, monkeypatch):
    (tmp_path / "reversed_store.py").write_text(STORE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(STORES, "reversed", "reversed_store")
    value = canary("reg").replace("-", "")
    parsed = parse_ref("T", f"reversed:{value[::-1]}", "test:T")
    assert isinstance(parsed, SecretRef) and parsed.scheme == "reversed"
    assert sha(resolve([parsed], no_env)["T"].reveal()) == sha(value)
    refused = parse_ref("T", "reversed:a-b", "test:T")
    assert isinstance(refused, Problem) and refused.message == "secrets.T: reversed:a-b: letters and digits only"
    assert "reversed:text" in refused.hint
    sys.modules.pop("reversed_store", None)


def test_an_unknown_scheme_is_exit_2_naming_every_known_one(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    (repo / ".primus.yaml").write_text("container:\n  gpu: none\n")
    (tmp_path / "home" / ".primus.yaml").write_text("secrets:\n  T: vault:kv/ml/token\n")  # the user's own: trusted
    result = run_in_clone(repo, "plan", "--", "true")
    assert result.returncode == 2, result.stderr
    assert "secrets.T: not a secret reference" in result.stderr and "Traceback" not in result.stderr
    for scheme in STORES:
        assert f"{scheme}:" in result.stderr, f"the hint does not name {scheme}:"
