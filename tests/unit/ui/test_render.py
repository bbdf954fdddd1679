"""The human plan views: rich tables for terminals, plain text for pipes; never a value of a secret."""

from __future__ import annotations

import io

from rich.console import Console

from plan_factory import plan_from

from runner.ui.render import plan_tables, plan_text

CANARY = "canary-render-41d0c2f7aa"


def _plan(work):
    host = {"HF_TOKEN": CANARY, "ODD": "[bold]not markup[/bold]"}
    config = "container:\n  options:\n    image: busybox\n    env: [HF_TOKEN, ODD]\n"
    return plan_from(work, config, ["echo", "hi there"], host=host, flags=["--gpu", "none"]).plan


def test_tables_show_values_literally_and_secrets_as_mask(work):
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, force_terminal=False)
    for table in plan_tables(_plan(work)):
        console.print(table)
    text = buffer.getvalue()
    assert "[bold]not markup[/bold]" in text  # a value is text, never rich markup
    assert "HF_TOKEN" in text and "***" in text and CANARY not in text


def test_plain_text_quotes_the_command_and_hides_secrets(work):
    text = plan_text(_plan(work))
    assert "echo 'hi there'" in text
    assert "HF_TOKEN=*** [secret]" in text and CANARY not in text
