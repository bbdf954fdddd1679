"""runner.engines: the commands that act on what an engine started (``ps``, ``logs``, ``down``,
``exec``, ``status``, ``cancel``) are verbs each engine declares, found through the registry.

A toy engine registered in ``ENGINES`` (one line, nothing else touched) receives ``ps`` and
``down`` from the command line; a verb an engine lacks is one usage error (exit 2); the CLI
and the commands choose no behaviour by an engine's name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import runner
import runner.engines as registry
from runner.cli import main
from runner.engines import ENGINES, engine_for, engine_for_verb, verb
from runner.engines.base import VERBS, EngineBase

CALLS: list[tuple[str, object]] = []


class ToyEngine(EngineBase):
    """The least an engine needs to own ``ps`` and ``down``: the verbs, nothing of a launch."""

    name = "toy"
    audit_after = False
    computed_env: tuple[str, ...] = ()

    @staticmethod
    def claims(name: str) -> bool:
        return name.startswith("toy-")

    def ps(self, sel, out) -> int:
        CALLS.append(("ps", sel))
        out.json([{"name": "toy-1"}]) if out.json_mode else out.result("toy-1")
        return 0

    def down(self, sel, out) -> int:
        CALLS.append(("down", sel))
        out.info(f"toy removed {', '.join(sel.names) or 'all'}" + (" (dry run)" if sel.dry_run else ""))
        return 0

    def logs(self, sel, out) -> int:
        CALLS.append(("logs", sel))
        return 0


@pytest.fixture
def toy(monkeypatch, work):
    """The toy engine, registered by its one registry line."""
    CALLS.clear()
    monkeypatch.setenv("XDG_STATE_HOME", str(work / "state"))  # an empty run store: `logs` asks the engines
    monkeypatch.setitem(ENGINES, "toy", (__name__, "ToyEngine"))
    yield
    CALLS.clear()


def test_ps_and_down_reach_a_registered_toy_engine_through_the_cli(toy, capsys):
    assert main(["ps", "--engine", "toy", "--json"]) == 0
    assert '"toy-1"' in capsys.readouterr().out
    assert main(["down", "--engine", "toy", "toy-1", "toy-2", "--dry-run"]) == 0
    assert main(["down", "--engine", "toy", "--all", "--all-users"]) == 0
    assert [call for call, _ in CALLS] == ["ps", "down", "down"]
    first, second = CALLS[1][1], CALLS[2][1]
    assert first.names == ("toy-1", "toy-2") and first.dry_run and not first.all
    assert second.all and second.all_users and not second.dry_run
    assert "toy removed all" in capsys.readouterr().err


def test_logs_reaches_the_engine_that_claims_the_name_without_engine(toy):
    assert main(["logs", "toy-7", "--tail", "3"]) == 0
    assert CALLS and CALLS[0][0] == "logs" and CALLS[0][1].names == ("toy-7",) and CALLS[0][1].tail == 3


def test_a_verb_the_engine_lacks_is_one_usage_error_naming_the_engines_that_have_it(toy, capsys):
    assert main(["cancel", "--engine", "toy", "1234"]) == 2
    err = capsys.readouterr().err
    assert "the toy engine has no `cancel`; engines with it: slurm" in err
    assert "Traceback" not in err and not CALLS


def test_the_process_engine_has_no_cancel(work, capsys):
    assert main(["cancel", "--engine", "process", "1234"]) == 2
    assert "the process engine has no `cancel`; engines with it: slurm" in capsys.readouterr().err


def test_an_unknown_engine_is_a_usage_error(work, capsys):
    assert main(["ps", "--engine", "k8s"]) == 2
    assert "unknown engine 'k8s'" in capsys.readouterr().err


def test_each_engine_declares_its_verbs():
    declared = {name: {v for v in VERBS if callable(getattr(engine_for(name), v, None))} for name in ENGINES}
    assert declared == {"docker": {"ps", "logs", "down", "exec"}, "slurm": {"ps", "logs", "status", "cancel"}, "process": set()}


def test_the_default_engine_of_a_verb_is_the_first_that_declares_it_or_claims_the_name():
    assert engine_for_verb("ps").name == "docker"
    assert engine_for_verb("status").name == "slurm" and engine_for_verb("cancel").name == "slurm"
    assert engine_for_verb("logs", name="1234").name == "slurm"
    assert engine_for_verb("logs", name="1234_5").name == "slurm"
    assert engine_for_verb("logs", name="primus-1a2b").name == "docker"
    assert engine_for_verb("ps", "slurm").name == "slurm"
    with pytest.raises(runner.errors.UsageError, match="the slurm engine has no `down`; engines with it: docker"):
        verb(engine_for("slurm"), "down")


def _engine_name_comparisons(path: Path) -> list[str]:
    """``x == "slurm"``-like tests of an engine's name (a value of ENGINES, or podman)."""
    names = set(ENGINES) | {"podman"}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            constants = [s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)]
            others = [ast.unparse(s) for s in sides if not isinstance(s, ast.Constant)]
            if any(c in names for c in constants) and any("engine" in o for o in others):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_cli_the_commands_and_the_run_store_choose_no_behaviour_by_an_engine_name():
    root = Path(runner.__file__).parent
    files = [*sorted((root / "cli").glob("*.py")), *sorted((root / "commands").glob("*.py")),
             root / "options.py", root / "plan.py", *sorted((root / "session").glob("*.py")),
             *sorted((root / "runs").glob("*.py"))]  # the run store: job directories and logs are engine facts
    found = [hit for path in files for hit in _engine_name_comparisons(path)]
    text = {path: path.read_text() for path in files}
    found += [f"{p.name}: engine.name looked up in a table" for p, t in text.items() if ".get(engine.name" in t]
    assert found == []


def test_the_registry_is_the_only_engine_table(monkeypatch):
    """Registering an engine is one line: it is then listed by the registry's every question."""
    monkeypatch.setitem(ENGINES, "toy", (__name__, "ToyEngine"))
    assert "toy" in registry.engines_with("ps") and "toy" in registry.engines_with("down")
    assert "toy" not in registry.engines_with("status")
