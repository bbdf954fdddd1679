"""Nothing outside ``runner/trackers/`` names a tracker: the run store, the session, the engines (the
node agent included) and the plan ask each tracker's hooks (``TrackerSettings``: outputs, run id,
requeue variables) instead. Code only: comments and docstrings may name one as an example."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import runner
from runner.trackers import TRACKERS, settings

ROOT = Path(runner.__file__).parent
ASKERS = ("runs", "session", "engines", "launch_plan.py", "plan.py")  # where a tracker's outputs and run ids are used


def _names() -> re.Pattern:
    words = set(TRACKERS) | {settings(name).run_id for name in TRACKERS if settings(name).run_id}
    words |= {var for name in TRACKERS for var in settings(name).requeue_env}
    words |= {name.upper() + "_" for name in TRACKERS}  # MLFLOW_..., WANDB_...
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.I)


def _code_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string and identifier in the code, docstrings left out."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.Name):
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            found.append((node.lineno, node.attr))
    return found


def test_no_module_outside_the_trackers_names_one_in_its_code():
    pattern = _names()
    paths = [p for entry in ASKERS for p in ([ROOT / entry] if entry.endswith(".py") else (ROOT / entry).rglob("*.py"))]
    leaks = [f"{path.relative_to(ROOT.parent)}:{line}: {text!r}" for path in paths
             for line, text in _code_strings(ast.parse(path.read_text())) if pattern.search(text)]
    assert leaks == []


def test_the_check_finds_a_name_planted_in_code_but_not_in_a_docstring():
    pattern = _names()
    planted = ast.parse('"""MLflow is named here, as an example."""\nids = {"run": env["WANDB_RUN_ID"]}\n')
    assert [text for _, text in _code_strings(planted) if pattern.search(text)] == ["WANDB_RUN_ID"]
