"""The house rules of docs/architecture.md, checked on the source: arrows point down,
argparse ends at the CLI, one place builds the masker, no import cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import runner

ROOT = Path(runner.__file__).parent


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(), str(path))
    return found


MODULES = _modules()


def _imports(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {n for n in names if n.split(".")[0] in ("runner", "argparse")}


def _top_level_imports(tree: ast.Module) -> set[str]:
    """Imports executed when the module loads (function-level imports are lazy by design)."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:  # `from pkg import submodule` loads the submodule
                sub = f"{node.module}.{alias.name}"
                names.add(sub if sub in MODULES else node.module)
    return {n for n in names if n in MODULES}


def test_argparse_only_in_the_cli():
    users = sorted(m for m, tree in MODULES.items() if "argparse" in _imports(tree) and m not in ("runner.cli", "runner.cli.completion"))
    assert users == [], f"below the CLI nothing knows argparse: {users}"
    # completion reads the parser it is handed; it never imports the CLI
    assert not any(n.startswith("runner.cli") for n in _imports(MODULES["runner.cli.completion"]))


def test_no_arrow_up_from_the_lower_layers():
    lower = ("runner.clients.engine_api", "runner.images", "runner.secrets", "runner.clients.registry", "runner.plan", "runner.policy", "runner.config")
    for module, tree in MODULES.items():
        if module.startswith(lower):
            ups = sorted(n for n in _imports(tree) if (n.startswith(("runner.engines", "runner.session.pipeline", "runner.cli.")) or n == "runner.cli"))
            assert ups == [], f"{module} imports {ups}: arrows point down only"


def test_engine_api_imports_neither_engines_nor_images():
    for module, tree in MODULES.items():
        if module.startswith("runner.clients.engine_api"):
            assert not [n for n in _imports(tree) if n.startswith(("runner.engines", "runner.images"))], module


def test_no_import_cycle_at_load_time():
    graph = {m: _top_level_imports(t) for m, t in MODULES.items()}
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if nxt == node or node.startswith(nxt + "."):
                continue  # a submodule importing its own package: Python's normal package loading
            if state.get(nxt) == 1:
                raise AssertionError(f"import cycle: {' -> '.join(stack + [node, nxt])}")
            if not state.get(nxt):
                visit(nxt, stack + [node])
        state[node] = 2

    for module in graph:
        if not state.get(module):
            visit(module, [])


def test_one_place_builds_the_masker():
    builders = []
    for module, tree in MODULES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Masker":
                builders.append(module)
    assert sorted(set(builders)) == ["runner.secrets.scope"], f"a Masker is built outside secret_scope: {builders}"


def test_the_check_itself_can_fail(tmp_path):
    """The rule above finds a Masker( call when there is one (the check is not vacuous)."""
    tree = ast.parse("from runner.secrets import Masker\nm = Masker([])\n")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Masker"]
    assert calls
