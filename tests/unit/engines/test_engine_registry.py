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


CHECKED: list = []


def config_problems(config) -> list:
    """A toy engine's config checker: its section's ``speed`` must be a number."""
    from runner.errors import Problem

    CHECKED.append(config.get("toysection"))
    speed = config.get("toysection", "speed")
    return [] if isinstance(speed, int) else [Problem("toysection.speed: not a number", where=config.where(("toysection", "speed")))]


def test_an_engines_own_config_section_is_checked_through_its_registry_line_alone(monkeypatch, tmp_path):
    """The third entry of an ``ENGINES`` line names the module that checks the engine's section; it is
    asked only when the user's files set that section (the built-in defaults alone load nothing)."""
    from runner.config import Config
    from runner.engines import config_problems as problems_of
    from runner.resources import policies_dir

    monkeypatch.setitem(ENGINES, "toysection", ("runner.engines.process", "ProcessEngine", __name__))
    CHECKED.clear()
    user = str(tmp_path / ".primus.yaml")
    bad = Config(data={"toysection": {"speed": "fast"}}, lines={("toysection",): f"{user}:1", ("toysection", "speed"): f"{user}:2"})
    (problem,) = [p for p in problems_of(bad) if "toysection" in p.message]
    assert problem.where == f"{user}:2"
    builtin = f"{policies_dir() / 'defaults.yaml'}:9"
    assert problems_of(Config(data={"toysection": {"speed": "x"}}, lines={("toysection",): builtin})) == []
    assert CHECKED == [{"speed": "fast"}]  # the built-in section alone was not checked
