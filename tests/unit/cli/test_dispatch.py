"""Every command runs in the module the dispatch table names, loaded by name when it runs."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

from runner.cli import dispatch
from runner.cli.parser import ARGUMENTS, COMMANDS


def test_every_command_of_the_grammar_has_a_module_in_the_table():
    assert set(dispatch.COMMANDS) == set(COMMANDS) == set(ARGUMENTS)


@pytest.mark.parametrize("name", list(dispatch.COMMANDS))
def test_each_entry_names_a_function_that_takes_the_output_and_its_typed_arguments(name):
    module, function, _ = dispatch.COMMANDS[name]
    run = getattr(importlib.import_module(module), function)
    assert "out" in inspect.signature(run).parameters


def test_a_command_loads_its_own_module_and_no_other_commands():
    """``ps`` in a fresh process: of ``runner.commands`` only its module (and the verbs it runs) is imported."""
    probe = ("import sys\nfrom runner.cli import main\ntry:\n    main(['ps', '--engine', 'docker'])\nfinally:\n"
             "    print(' '.join(sorted(m for m in sys.modules if m.startswith('runner.commands.'))))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1].split() == ["runner.commands.ps", "runner.commands.verbs"], done.stderr[-2000:]
