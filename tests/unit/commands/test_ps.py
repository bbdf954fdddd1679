"""``ps``: the engine's own ``ps`` verb, given the selection the command line made."""

from __future__ import annotations

from runner.cli import main


def test_ps_runs_the_engines_ps_with_the_switches_given(verbs):
    assert main(["ps", "--all-users", "--engine", "toyverbs"]) == 11
    [(verb, sel)] = verbs
    assert verb == "ps" and sel.all_users is True and sel.engine == "toyverbs" and sel.names == ()


def test_an_unknown_engine_is_a_usage_error(verbs, capsys):
    assert main(["ps", "--engine", "nosuch"]) == 2
    assert "unknown engine 'nosuch'" in capsys.readouterr().err and verbs == []
