"""runner.engines: the registry is a table; every entry is an Engine."""

from __future__ import annotations

import pytest

from runner.engines import ENGINES, engine_for

PROTOCOL = ("preflight", "request", "launch", "announce", "group_title", "dry_run", "watch", "audit", "finished")


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_each_registered_engine_implements_the_protocol(name):
    engine = engine_for(name)
    assert engine.name == name
    for method in PROTOCOL:
        assert callable(getattr(engine, method)), f"{name} lacks {method}"
    assert isinstance(engine.audit_after, bool) and isinstance(engine.computed_env, tuple)


def test_an_unknown_engine_is_named_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown engine 'k8s'.*docker, slurm, process"):
        engine_for("k8s")
