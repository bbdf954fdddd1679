"""``exec [-i] [-t] NAME [-i] [-t] [--] CMD…``: the options before NAME or right after it, the rest the
command; the engine's ``exec`` verb gets the command and the terminal switches."""

from __future__ import annotations

import pytest

from runner.cli import main
from runner.commands.exec import split_command


@pytest.mark.parametrize(("words", "given", "command"), [
    (["ls", "-l"], set(), ["ls", "-l"]),
    (["-it", "bash"], {"i", "t"}, ["bash"]),
    (["-i", "--", "-t", "x"], {"i"}, ["-t", "x"]),  # after --: the command's own options
    (["--tty", "cat", "-i"], {"t"}, ["cat", "-i"]),  # after the first word: the command's
    (["-ti"], {"i", "t"}, []),
    ([], set(), []),
])
def test_split_command(words, given, command):
    assert split_command(words) == (given, command)


def test_exec_runs_the_engines_exec_with_the_command(verbs):
    assert main(["exec", "--engine", "toyverbs", "my-job", "-i", "--", "cat", "-n"]) == 14
    [(verb, sel)] = verbs
    assert (verb, sel.names, sel.command, sel.interactive, sel.tty) == ("exec", ("my-job",), ("cat", "-n"), True, False)
    assert (sel.job_container, sel.job_secrets) == (None, ())  # no running run of that name: no secrets to hand over


def test_no_command_is_a_usage_error(verbs, capsys):
    assert main(["exec", "--engine", "toyverbs", "my-job", "-i"]) == 2
    assert "no command given" in capsys.readouterr().err and verbs == []


def test_a_tty_without_a_terminal_is_refused_before_the_engine(verbs, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", open("/dev/null"))
    assert main(["exec", "--engine", "toyverbs", "-t", "my-job", "sh"]) == 2
    assert "not a TTY" in capsys.readouterr().err and verbs == []


def test_a_running_jobs_secrets_are_found_from_its_record_and_handed_to_the_verb(verbs, work, monkeypatch, capsys):
    import os

    from runner.runs.store import Store

    canary = "canary-exec-5be0a1c7d2"
    monkeypatch.setenv("HF_TOKEN", canary)
    monkeypatch.delenv("GONE_TOKEN", raising=False)
    store = Store.open()
    store.put({"id": "20260101-000001-aaaaaa", "uid": os.getuid(), "user": "you", "host": "h", "engine": "docker",
               "name": "live-job", "state": "running", "container_id": "c0ffee", "cwd": str(work), "started_ts": 1.0,
               "env": [{"name": "HF_TOKEN", "secret": True}, {"name": "GONE_TOKEN", "secret": True}, {"name": "PUBLIC", "secret": False}]})
    store.close()
    assert main(["exec", "--engine", "toyverbs", "live-job", "--", "env"]) == 14
    [(_, sel)] = verbs
    assert sel.job_container == "c0ffee" and [name for name, _ in sel.job_secrets] == ["HF_TOKEN"]
    err = capsys.readouterr().err
    assert "not in the run's scope now, not passed to the command: GONE_TOKEN" in err and canary not in err
