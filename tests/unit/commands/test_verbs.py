"""``run_verb``: the verb of the engine ``--engine`` names, else of the engine that claims the id,
else of the first engine that declares it; an engine without the verb is one usage error."""

from __future__ import annotations

import pytest

from runner.commands.verbs import run_verb
from runner.errors import UsageError
from runner.options import Selection
from runner.ui import Output


def test_the_named_engines_verb_runs(verbs):
    sel = Selection(names=("9",), engine="toyverbs")
    assert run_verb("status", sel, Output(color=False)) == 15
    assert verbs == [("status", sel)]


def test_an_id_the_toy_claims_goes_to_the_toy_without_engine(verbs):
    # docker comes first in the registry and has `logs`, but it does not claim the id
    sel = Selection(names=("toy-7",))
    assert run_verb("logs", sel, Output(color=False), claimed="toy-7") == 12
    assert verbs == [("logs", sel)]


def test_an_engine_without_the_verb_is_a_usage_error_naming_those_with_it(verbs):
    with pytest.raises(UsageError) as err:
        run_verb("status", Selection(names=("9",), engine="process"), Output(color=False))
    assert "the process engine has no `status`" in err.value.message and "toyverbs" in err.value.message
    assert verbs == []
