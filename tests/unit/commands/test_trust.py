"""``trust [--show] [--revoke]``: the project files a command here would read, recorded by path and
content hash; ``--show`` records nothing; a changed file needs trust again."""

from __future__ import annotations

import json

# an entry only a trusted project file may set
ASKS = "slurm:\n  allow_env_in_accounting: true\n"


def _project(clone):
    (clone / ".primus.yaml").write_text(ASKS)
    return clone


def _statuses(cli, clone, *argv) -> dict:
    rc, out, err = cli("--json", "trust", *argv, cwd=clone, home=clone.parent / "home")
    assert rc == 0, err
    return {f["path"]: f["status"] for f in json.loads(out)["files"]}


def test_show_lists_untrusted_files_and_what_they_ask_and_records_nothing(cli, clone):
    _project(clone)
    rc, out, err = cli("--json", "trust", "--show", cwd=clone, home=clone.parent / "home")
    assert rc == 0, err
    report = json.loads(out)
    [found] = report["files"]
    assert (found["path"], found["kind"], found["status"], report["recorded"]) == (str(clone / ".primus.yaml"), "project", "untrusted", False)
    assert any("slurm.allow_env_in_accounting" in ask for ask in found["asks"])
    assert not any(p.is_file() for p in (clone.parent / "home").rglob("*"))  # no trust store written


def test_trust_records_revoke_forgets_and_a_change_needs_trust_again(cli, clone):
    path = str(_project(clone) / ".primus.yaml")
    assert _statuses(cli, clone) == {path: "trusted"}
    assert _statuses(cli, clone, "--show") == {path: "trusted"}
    (clone / ".primus.yaml").write_text(ASKS + "# edited\n")
    assert _statuses(cli, clone, "--show") == {path: "changed"}
    assert _statuses(cli, clone) == {path: "trusted"}
    assert _statuses(cli, clone, "--revoke") == {path: "untrusted"}
    assert _statuses(cli, clone, "--show") == {path: "untrusted"}


def test_a_trusted_file_is_then_read_without_trust_project(cli, clone):
    _project(clone)
    home = clone.parent / "home"
    assert cli("plan", "--gpu", "none", "--", "true", cwd=clone, home=home).rc == 2  # refused: untrusted
    assert cli("trust", cwd=clone, home=home).rc == 0
    rc, _, err = cli("plan", "--gpu", "none", "--", "true", cwd=clone, home=home)
    assert rc == 0, err


def test_no_project_files_is_said_and_exit_0(cli, clone):
    rc, _, err = cli("trust", cwd=clone, home=clone.parent / "home")
    assert rc == 0 and "no project files here" in err, err
