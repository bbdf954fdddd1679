"""The house rules of docs/architecture.md, checked on the source.

``LAYERS`` is the drawing of the house, bottom first. A module belongs to the
longest entry that is a prefix of its name (``runner.ui.render`` is its own
entry, above the plan it draws; ``runner.ui.ci`` is part of ``runner.ui``).
Every import counts, wherever it is written: at module level, inside a
function, under ``if TYPE_CHECKING:``. An import may go down the table, or stay
inside its own entry; one that goes up, or sideways to another entry of the
same row, fails. And no two modules may reach each other, by any path of
imports, lazy ones included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import runner

ROOT = Path(runner.__file__).parent

# Bottom first; each row may import only the rows above it in this list (and itself, inside one entry).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("runner", "runner.errors", "runner.options", "runner.resources"),  # the version; typed errors and options; data files
    ("runner.subprocesses",),     # the one runner of a short-lived program (bounded, no shell)
    ("runner.git",),              # the one git query
    ("runner.secrets",),          # Secret, Masker, the one scope, the leak scanner, secret references (refs/: grammar, resolve, a module per store)
    ("runner.config",),           # layers, YAML with lines, schema, env file
    ("runner.policy",),           # the one classifier of variables
    ("runner.host_env",),         # what a host process (direct) inherits from the user's environment
    ("runner.ui",),               # Output, CI output, progress
    ("runner.context",),          # a command's config, env file and secret scope, without a launch
    # the Engine API client in docker-py's shape: pure request parts, then transport <- negotiation <- api
    ("runner.clients.engine_api.types", "runner.clients.engine_api.libpod"),  # versions, paths, GPU fields; Podman's create body
    ("runner.clients.engine_api.discovery",),    # which socket answers
    ("runner.clients.engine_api.transport",),    # connections, streams, hijacked sockets
    ("runner.clients.engine_api.negotiation",),  # the API version, the engine's kind
    ("runner.clients.engine_api.api",),          # Engine: the calls
    ("runner.clients",),          # the one Engine API client, registry, git
    ("runner.gpus",),             # GPU discovery (sysfs/proc), selection, holders and leases, Slurm mapping
    ("runner.trackers",),         # the Tracker protocol, one module per tracker, the registry
    ("runner.launch_plan",),      # the LaunchPlan type (what every engine and each Slurm node receive)
    ("runner.plan",),             # planning: config, flags and environment in, a LaunchPlan out
    ("runner.runs.paths",),       # where runs live: the state directory, run ids
    ("runner.runs.cache",),       # the job cache mount (pure, on a plan): each Slurm node applies it too
    ("runner.ui.render",),        # views of a plan: above the plan they draw
    ("runner.images",),           # recipes, contexts, builders, the post-build scan
    ("runner.engines",),          # the Engine protocol, docker/, slurm/, process, the registry
    ("runner.runs",),             # every run's record, store, log, tracker outputs; runs/logs commands
    ("runner.session",),          # prepare, pipeline, report
    ("runner.commands",),         # one module per command
    ("runner.cli",),              # argparse, dispatch, exit codes
    ("runner.__main__",),
)


def _load_modules(root: Path = ROOT) -> dict[str, ast.Module]:
    found = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(), str(path))
    return found


MODULES = _load_modules()
PACKAGES = {name for name in MODULES if (ROOT.parent / name.replace(".", "/") / "__init__.py").exists()}


def _known(name: str, modules) -> str | None:
    """The module an imported name lands in: the longest known module that prefixes it."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, tree: ast.Module, modules, packages=frozenset()) -> set[str]:
    """Every runner module ``module`` imports, at any depth of its code (functions and
    ``if TYPE_CHECKING:`` included); ``from pkg import sub`` counts as ``pkg.sub``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this module's package
                package = module.split(".") if module in packages else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        elif _delegated(node):  # an engine method another module implements, imported on its first call
            targets = [node.args[0].value]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "runner" and (known := _known(target, modules)) and known != module:
                found.add(known)
    return found


def _delegated(node: ast.AST) -> bool:
    """``delegate("runner.x.y", …)`` (``runner.engines.base.delegate``): a lazy import by name."""
    return (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "delegate" and bool(node.args)
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))


def graph_of(modules, packages=frozenset()) -> dict[str, set[str]]:
    return {name: imports_of(name, tree, modules, packages) for name, tree in modules.items()}


def entry_of(module: str) -> tuple[int, str]:
    """(row, entry) of ``module`` in LAYERS: its longest prefix entry."""
    best = None
    for row, entries in enumerate(LAYERS):
        for entry in entries:
            if (module == entry or module.startswith(entry + ".")) and (best is None or len(entry) > len(best[1])):
                best = (row, entry)
    if best is None:
        raise AssertionError(f"{module} is in no row of LAYERS: add it where it belongs")
    return best


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import that goes up the table or sideways to another entry of its row."""
    bad = []
    for module, targets in sorted(graph.items()):
        row, entry = entry_of(module)
        for target in sorted(targets):
            t_row, t_entry = entry_of(target)
            if t_row > row:
                bad.append(f"{module} -> {target} (up: {entry} is below {t_entry})")
            elif t_row == row and t_entry != entry:
                bad.append(f"{module} -> {target} (sideways: {entry} and {t_entry} share a row)")
    return bad


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of modules (Tarjan): each group is a cycle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


GRAPH = graph_of(MODULES, PACKAGES)


def test_every_module_has_a_row():
    for module in MODULES:
        entry_of(module)


def test_imports_go_down_the_layers_only():
    bad = layer_violations(GRAPH)
    assert bad == [], "imports against LAYERS:\n" + "\n".join(bad)


def test_no_import_cycle_lazy_imports_included():
    cycles = import_cycles(GRAPH)
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def _planted(**sources: str) -> dict[str, set[str]]:
    """The real graph with some modules' source replaced by ``sources``."""
    modules = dict(MODULES)
    for name, source in sources.items():
        modules[name.replace("__", ".")] = ast.parse(source)
    return graph_of(modules, PACKAGES)


def test_the_checker_finds_a_planted_upward_import_in_a_function():
    graph = _planted(runner__errors="def f():\n    from runner.cli import main\n")
    assert any(v.startswith("runner.errors -> runner.cli (up") for v in layer_violations(graph))


def test_the_checker_finds_a_planted_type_checking_import_and_a_sideways_one():
    graph = _planted(runner__options="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from runner.errors import RunnerError\n"
                                     "    from runner.plan import LaunchPlan\n")
    found = layer_violations(graph)
    assert "runner.options -> runner.errors (sideways: runner.options and runner.errors share a row)" in found
    assert any(v.startswith("runner.options -> runner.plan (up") for v in found)


def test_the_checker_finds_a_planted_cycle_of_lazy_imports():
    graph = _planted(runner__secrets__value="def f():\n    from runner.secrets import scope\n",
                     runner__secrets__scope="from runner.secrets.value import Secret\n")
    assert ["runner.secrets.scope", "runner.secrets.value"] in import_cycles(graph)


def test_the_checker_sees_an_engine_method_delegated_to_a_module_by_name():
    graph = _planted(runner__engines__process="from runner.engines.base import delegate\n"
                                              "class P:\n    ps = delegate('runner.session.pipeline')\n")
    assert any(v.startswith("runner.engines.process -> runner.session.pipeline (up") for v in layer_violations(graph))
    assert "runner.engines.slurm.verbs" in GRAPH["runner.engines.slurm.engine"]  # the real delegates are edges too


def test_relative_imports_are_resolved():
    graph = _planted(runner__ui__pull_progress="from ..plan import LaunchPlan\n")
    assert "runner.plan" in graph["runner.ui.pull_progress"]


def argparse_users(modules) -> list[str]:
    """The modules outside ``runner.cli`` that import argparse."""
    def uses_argparse(tree):
        return any(isinstance(n, ast.Import) and any(a.name == "argparse" for a in n.names)
                   or isinstance(n, ast.ImportFrom) and n.module == "argparse" for n in ast.walk(tree))

    return sorted(m for m, tree in modules.items() if uses_argparse(tree) and not (m == "runner.cli" or m.startswith("runner.cli.")))


def test_argparse_only_in_the_cli():
    users = argparse_users(MODULES)
    assert users == [], f"below the CLI nothing knows argparse: {users}"
    # completion reads the parser it is handed; it never imports the CLI
    assert not any(n.startswith("runner.cli") for n in GRAPH["runner.cli.completion"])


def test_one_place_builds_the_masker():
    builders = []
    for module, tree in MODULES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Masker":
                builders.append(module)
    assert sorted(set(builders)) == ["runner.secrets.scope"], f"a Masker is built outside secret_scope: {builders}"


def _calls_named(name: str, modules=None) -> list[str]:
    return sorted({module for module, tree in (MODULES if modules is None else modules).items() for node in ast.walk(tree)
                   if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name})


def test_one_place_builds_the_engine_api_client():
    """One client per process (one discovery, one negotiation): only ``engine_client`` makes it."""
    assert _calls_named("Engine") == ["runner.clients.engine_api.shared"]


def test_the_masker_check_itself_can_fail():
    """The rule above finds a Masker( call when there is one (the check is not vacuous)."""
    tree = ast.parse("from runner.secrets import Masker\nm = Masker([])\n")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Masker"]
    assert calls


def test_the_argparse_and_engine_client_checks_find_a_planted_one():
    planted = {**MODULES, "runner.policy": ast.parse("def f():\n    import argparse\n    from runner.clients.engine_api.api import Engine\n"
                                                     "    return argparse, Engine()\n")}
    assert argparse_users(planted) == ["runner.policy"]
    assert _calls_named("Engine", planted) == ["runner.clients.engine_api.shared", "runner.policy"]


# Ctrl-C is mapped to an exit code and a message in one place; every other path cleans up in a
# `finally` (or a handler of everything that raises again) and lets the interrupt go on up.
CATCHES_INTERRUPTS = {"runner.ui.exits"}
# A handler of everything that keeps what it caught: a thread's body (no Ctrl-C reaches a thread), which hands it to its caller.
KEEPS_WHAT_IT_CATCHES = {"runner.trackers.background"}


def interrupt_catches(module: str, tree: ast.Module) -> list[str]:
    """Each ``except`` that would end a Ctrl-C here: one naming ``KeyboardInterrupt``; a bare one or
    one of ``BaseException`` that does not end by raising."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ExceptHandler):
            continue
        names = {getattr(n, "id", getattr(n, "attr", None)) for n in ast.walk(node.type)} if node.type else {"BaseException"}
        if "KeyboardInterrupt" in names and module not in CATCHES_INTERRUPTS:
            found.append(f"{module}:{node.lineno} catches KeyboardInterrupt")
        elif "BaseException" in names and not isinstance(node.body[-1], ast.Raise) and module not in KEEPS_WHAT_IT_CATCHES | CATCHES_INTERRUPTS:
            found.append(f"{module}:{node.lineno} catches BaseException without raising it again")
    return found


def test_only_the_exit_mapping_catches_an_interrupt():
    found = [line for module, tree in sorted(MODULES.items()) for line in interrupt_catches(module, tree)]
    assert found == [], "Ctrl-C is said and given its code in runner/ui/exits.py only (interrupt_means, interrupt_ends_follow):\n" \
        + "\n".join(found)


def test_the_interrupt_check_finds_what_would_swallow_one():
    planted = ast.parse("try:\n    f()\nexcept (OSError, KeyboardInterrupt):\n    pass\n"
                        "try:\n    f()\nexcept BaseException:\n    cleanup()\n"
                        "try:\n    f()\nexcept:\n    pass\n"
                        "try:\n    f()\nexcept BaseException:\n    cleanup()\n    raise\n")
    assert interrupt_catches("runner.engines.x", planted) == [
        "runner.engines.x:3 catches KeyboardInterrupt", "runner.engines.x:7 catches BaseException without raising it again",
        "runner.engines.x:11 catches BaseException without raising it again"]
    assert interrupt_catches("runner.ui.exits", planted) == []
