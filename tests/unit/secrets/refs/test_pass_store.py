"""``pass:path``: ``pass show -- path`` and its first line; a folder of the store is not an entry."""

from __future__ import annotations

import pytest

from runner.secrets.refs import pass_store
from runner.secrets.refs.failures import Missing
from secret_ref_helpers import canary, ref


@pytest.fixture
def calls(monkeypatch, tmp_path):
    seen: list[list[str]] = []
    value = canary("pass")

    def output(argv, timeout, label):
        seen.append(argv)
        return f"{value}\nuser: alice\n".encode()

    monkeypatch.setattr(pass_store, "output", output)
    monkeypatch.setenv("PASSWORD_STORE_DIR", str(tmp_path))
    return seen, value


def test_the_value_is_the_first_line_of_pass_show_with_the_path_after_double_dash(calls):
    seen, value = calls
    assert pass_store.fetch(ref("T", "pass:-ml/hf"), None, 5) == value
    assert seen == [["pass", "show", "--", "-ml/hf"]]


def test_a_folder_of_the_store_is_refused_before_pass_runs(calls, tmp_path):
    seen, _ = calls
    (tmp_path / "ml").mkdir()
    with pytest.raises(Missing, match="a folder of the password store"):
        pass_store.fetch(ref("T", "pass:ml/"), None, 5)
    assert seen == []


def test_an_entry_beside_a_folder_of_the_same_name_is_read(calls, tmp_path):
    seen, value = calls
    (tmp_path / "ml").mkdir()
    (tmp_path / "ml.gpg").write_bytes(b"")
    assert pass_store.fetch(ref("T", "pass:ml"), None, 5) == value
