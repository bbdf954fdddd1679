"""The house rules of docs/architecture.md about where something is and who may do it (its
"Other house rules" paragraph lists them), checked on the source, on the docs themselves and on
the test tree. Each checker is shown to find a planted violation, so none passes by reading nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import runner

ROOT = Path(runner.__file__).parent
REPO = ROOT.parent
TESTS = REPO / "tests"
ARCHITECTURE = REPO / "docs" / "architecture.md"
DOCS_NAMING_TESTS = (REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")))


def _sources(root: Path = ROOT) -> dict[str, ast.Module]:
    """Each module of ``root`` by its path from ``root`` (``engines/docker/shim.py``)."""
    return {path.relative_to(root).as_posix(): ast.parse(path.read_text(), str(path)) for path in sorted(root.rglob("*.py"))}


SOURCES = _sources()


def _row(doc: str, first_cell: str) -> str:
    """The table row of ``doc`` whose first cell is ``first_cell``."""
    rows = [line for line in doc.splitlines() if line.startswith(f"| {first_cell} |")]
    assert len(rows) == 1, f"docs/architecture.md has no one row '| {first_cell} |'"
    return rows[0]


# ------------------------------------------------------------------ where a secret value is revealed

def reveal_sites(sources: dict[str, ast.Module]) -> set[str]:
    """The modules with a ``.reveal()`` call: every place a secret's plain value is taken."""
    return {path for path, tree in sources.items() for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "reveal"}


def named_reveal_sites(doc: str) -> set[str]:
    row = _row(doc, "where a secret value leaves the process")
    return set(re.findall(r"`([\w/]+\.py)`", row))


def test_the_doc_names_exactly_the_places_a_secret_is_revealed():
    """``grep -rn "\\.reveal()" runner/`` lists the modules the doc's row names, no more, no fewer."""
    found, named = reveal_sites(SOURCES), named_reveal_sites(ARCHITECTURE.read_text())
    assert not found - named, f"a .reveal() the doc's 'where a secret value leaves the process' does not name: {sorted(found - named)}"
    assert not named - found, f"the doc names a place that reveals nothing (any more): {sorted(named - found)}"


def test_the_reveal_check_finds_a_planted_reveal():
    planted = {**SOURCES, "commands/plan.py": ast.parse("def f(s):\n    return s.reveal()\n")}
    assert reveal_sites(planted) - reveal_sites(SOURCES) == {"commands/plan.py"}
    assert "engines/docker/shim.py" in reveal_sites(SOURCES) and "engines/docker/shim.py" in named_reveal_sites(ARCHITECTURE.read_text())


# ------------------------------------------------------------------ who starts a program

_SPAWNS = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "os": {"system", "popen", "posix_spawn", "posix_spawnp", *(f"exec{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
           *(f"spawn{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe"))},
    "pty": {"spawn"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
}


def program_starters(sources: dict[str, ast.Module]) -> set[str]:
    """The modules that start a program: ``subprocess.Popen(…)``, ``os.exec*``, … called, or a
    spawning name imported from those modules."""
    found = set()
    for path, tree in sources.items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                    and node.func.attr in _SPAWNS.get(node.func.value.id, ())) or (
                    isinstance(node, ast.ImportFrom) and any(a.name in _SPAWNS.get(node.module or "", ()) for a in node.names)):
                found.add(path)
    return found


def test_only_the_runner_of_programs_and_the_children_its_docstring_names_start_a_program():
    """``runner/subprocesses.py`` is the one runner of a short-lived program; a module that starts
    one otherwise is a streaming child its docstring names, with why."""
    docstring = ast.get_docstring(SOURCES["subprocesses.py"])
    unnamed = sorted(path for path in program_starters(SOURCES) - {"subprocesses.py"} if f"``{path}``" not in docstring)
    assert not unnamed, f"start a program without runner.subprocesses.run, and its docstring does not name them: {unnamed}"
    assert "subprocesses.py" in program_starters(SOURCES)  # the checker sees the real one


@pytest.mark.parametrize("source", ["import subprocess\nsubprocess.check_output(['id'])\n",
                                    "from subprocess import Popen\n", "import os\nos.execvp('sh', ['sh'])\n"])
def test_the_program_check_finds_a_planted_child(source):
    assert program_starters({**SOURCES, "policy.py": ast.parse(source)}) - program_starters(SOURCES) == {"policy.py"}


# ------------------------------------------------------------------ who runs git

def git_runners(sources: dict[str, ast.Module]) -> set[str]:
    """The modules with an argv that starts with ``"git"``."""
    return {path for path, tree in sources.items() for node in ast.walk(tree)
            if isinstance(node, (ast.List, ast.Tuple)) and node.elts
            and isinstance(node.elts[0], ast.Constant) and node.elts[0].value == "git"}


def test_only_the_hardened_query_runs_git():
    assert git_runners(SOURCES) == {"git.py"}
    assert git_runners({**SOURCES, "images/context.py": ast.parse("argv = ['git', 'ls-files']\n")}) == {"git.py", "images/context.py"}


# ------------------------------------------------------------------ an engine's signals

def signal_catchers(sources: dict[str, ast.Module], under: str = "engines/") -> set[str]:
    """The modules under ``under`` that install a signal handler other than for SIGWINCH (a terminal's
    size): SIGINT and SIGTERM are caught by ``engines/signals.py``'s ``SignalGuard`` alone."""
    found = set()
    for path, tree in sources.items():
        for node in ast.walk(tree):
            if (path.startswith(under) and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "signal" and getattr(node.func.value, "id", None) == "signal" and node.args
                    and getattr(node.args[0], "attr", None) != "SIGWINCH"):
                found.add(path)
    return found


def test_an_engine_catches_interrupts_only_through_the_signal_guard():
    assert signal_catchers(SOURCES) == {"engines/signals.py"}
    planted = {**SOURCES, "engines/process.py": ast.parse("import signal\nsignal.signal(signal.SIGTERM, print)\n")}
    assert signal_catchers(planted) == {"engines/signals.py", "engines/process.py"}


# ------------------------------------------------------------------ trackers and secret stores

_HTTP = ("urllib.request", "http.client", "ssl", "socket")


def http_speakers(sources: dict[str, ast.Module], under: str = "trackers/") -> set[str]:
    """The modules under ``under`` that import an HTTP, TLS or socket library of the standard library."""
    def speaks(node):
        if isinstance(node, ast.Import):
            return any(a.name in _HTTP for a in node.names)
        return isinstance(node, ast.ImportFrom) and (node.module in _HTTP or (node.module == "urllib" and any(a.name == "request" for a in node.names))
                                                     or (node.module == "http" and any(a.name == "client" for a in node.names)))
    return {path for path, tree in sources.items() if path.startswith(under) and any(speaks(n) for n in ast.walk(tree))}


def test_a_tracker_speaks_http_only_through_httpapi():
    """The same-origin redirects and the one credential unwrap hold for every tracker's request."""
    assert http_speakers(SOURCES) == {"trackers/httpapi.py"}
    planted = {**SOURCES, "trackers/wandb.py": ast.parse("def f():\n    from urllib import request\n")}
    assert http_speakers(planted) == {"trackers/httpapi.py", "trackers/wandb.py"}


def heavy_at_module_level(sources: dict[str, ast.Module], under: str = "secrets/refs/") -> dict[str, list[str]]:
    """What a store module imports at module level beyond the standard library and the runner."""
    import sys

    found = {}
    for path, tree in sources.items():
        if not path.startswith(under):
            continue
        names = [a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names]
        names += [n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module and not n.level]
        heavy = [n for n in names if n.split(".")[0] not in sys.stdlib_module_names and n.split(".")[0] != "runner"]
        if heavy:
            found[path] = heavy
    return found


def test_a_secret_store_imports_its_client_library_only_when_it_fetches():
    assert heavy_at_module_level(SOURCES) == {}
    planted = {**SOURCES, "secrets/refs/aws_sm.py": ast.parse("import boto3\ndef fetch():\n    import botocore\n")}
    assert heavy_at_module_level(planted) == {"secrets/refs/aws_sm.py": ["boto3"]}


def hook_shadows(root: Path = ROOT / "trackers") -> list[str]:
    """A tracker package's module named like a name its ``__init__`` defines (a hook): importing the
    module would replace the hook on the package."""
    found = []
    for init in sorted(root.rglob("__init__.py")):
        if init.parent == root:
            continue
        tree = ast.parse(init.read_text())
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        defined |= {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        found += [f"{p.relative_to(root)}" for p in sorted(init.parent.glob("*.py")) if p.stem in defined]
    return found


def test_no_module_of_a_tracker_package_is_named_like_a_hook(tmp_path):
    assert hook_shadows() == []
    assert (ROOT / "trackers" / "mlflow" / "__init__.py").is_file()  # a package is there to check
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "__init__.py").write_text("def check(plan, timeout):\n    from runner.trackers.toy import online\n")
    (tmp_path / "toy" / "check.py").write_text("")
    assert hook_shadows(tmp_path) == ["toy/check.py"]


# ------------------------------------------------------------------ the doc's layers are the test's

def _layers() -> tuple[tuple[str, ...], ...]:
    """``LAYERS`` of tests/unit/test_architecture.py, read as a literal (a test file imports no other)."""
    tree = ast.parse((TESTS / "unit" / "test_architecture.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == "LAYERS")
    return ast.literal_eval(node.value)


def doc_layer_rows(doc: str) -> list[tuple[set[str], str]]:
    """The rows of the doc's layers table, bottom first: (the modules its first cell names, the
    text of its second cell). ``runner/x/``, ``runner/x.py`` and, in the first row, a bare ``x``
    are the module ``runner.x``."""
    section = doc.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith(("| row", "| ---")):
            continue
        first, second = line.split(" | ", 2)[:2]
        names = {name.strip("/").removesuffix(".py").replace("/", ".") for name in re.findall(r"`([^`]+)`", first)}
        rows.append(({n if n.startswith("runner") else f"runner.{n}" for n in names}, second))
    return rows


def layers_against_doc(layers, rows) -> list[str]:
    """What differs: an entry no row names (a sub-entry may be named in its package's row by its last
    part), a row naming no entry, rows out of the table's order."""
    entries = [e for row in layers for e in row if e != "runner.__main__"]
    problems, at = [], []
    for entry in entries:
        where = [i for i, (names, text) in enumerate(rows) if entry in names or any(
            entry.startswith(n + ".") and f"`{entry.rpartition('.')[2]}`" in text for n in names if n != "runner")]
        if not where:
            problems.append(f"{entry}: no row of the doc's table names it")
        else:
            at.append((where[0], entry))
    problems += [f"a row names what LAYERS does not: {sorted(names - set(entries))}" for names, _ in rows if names - set(entries)]
    problems += [f"{b} is below {a} in the doc, above it in LAYERS" for (i, a), (j, b) in zip(at, at[1:]) if j < i]
    return problems


def test_the_doc_draws_the_layers_the_architecture_test_checks():
    problems = layers_against_doc(_layers(), doc_layer_rows(ARCHITECTURE.read_text()))
    assert problems == [], "docs/architecture.md's table of layers against LAYERS:\n" + "\n".join(problems)


def test_the_layers_check_finds_a_missing_row_and_a_row_out_of_order():
    rows = doc_layer_rows(ARCHITECTURE.read_text())
    assert len(rows) > 10  # the table is read
    swapped = [rows[0], rows[2], rows[1], *rows[3:]]
    assert any("is below" in p for p in layers_against_doc(_layers(), swapped))
    assert any(p.startswith("runner.policy:") for p in layers_against_doc(_layers(), [r for r in rows if "runner.policy" not in r[0]]))
    planted = set(layers_against_doc((*_layers(), ("runner.nowhere",)), rows)) - set(layers_against_doc(_layers(), rows))
    assert planted == {"runner.nowhere: no row of the doc's table names it"}


def commands_against_doc(doc: str, modules: set[str]) -> list[str]:
    """The modules of ``runner/commands/`` the doc's ``runner/commands/`` row does not name, and the
    names it gives that are no module there."""
    row = _row(doc, "`runner/commands/`")
    named = set(re.findall(r"`(\w+)`", row.split(" | ", 2)[1].split("|")[0]))
    return [f"runner/commands/{m}.py: not in the doc's row" for m in sorted(modules - named)] + [
        f"`{n}`: the doc's row names no such module" for n in sorted(named - modules)]


def test_the_commands_row_names_every_command_module():
    modules = {p.stem for p in (ROOT / "commands").glob("*.py") if p.stem != "__init__"}
    assert commands_against_doc(ARCHITECTURE.read_text(), modules) == []
    assert commands_against_doc(ARCHITECTURE.read_text(), modules | {"toy"}) == ["runner/commands/toy.py: not in the doc's row"]


# ------------------------------------------------------------------ the tests the docs name exist

def named_tests(text: str) -> list[tuple[str, str | None]]:
    """Each ``tests/…py`` (and ``::test_name``) the text names; a pattern (``test_NAME.py``) is none."""
    return [(path, name or None) for path, name in re.findall(r"(tests/[\w/]+\.py)(?:::(\w+))?", text)
            if not re.search(r"NAME|<", path)]


def missing_tests(text: str, repo: Path = REPO) -> list[str]:
    missing = []
    for path, name in named_tests(text):
        file = repo / path
        if not file.is_file():
            missing.append(path)
        elif name and not re.search(rf"^(async )?def {name}\b", file.read_text(), re.M):
            missing.append(f"{path}::{name}")
    return missing


@pytest.mark.parametrize("doc", DOCS_NAMING_TESTS, ids=lambda p: p.name)
def test_every_test_a_doc_names_exists(doc):
    assert missing_tests(doc.read_text()) == []


def test_the_named_test_check_finds_a_missing_file_and_function():
    assert named_tests(ARCHITECTURE.read_text())  # the doc names tests, and they are read
    text = "(`tests/unit/test_architecture.py::test_nothing_like_it`, `tests/unit/none.py`, `tests/unit/secrets/refs/test_NAME.py`)"
    assert missing_tests(text) == ["tests/unit/test_architecture.py::test_nothing_like_it", "tests/unit/none.py"]


# ------------------------------------------------------------------ the test tree

def tree_problems(files: list[Path], root: Path = TESTS) -> list[str]:
    """``__init__.py`` files, and a test file imported by another: pytest imports test files by path
    (``--import-mode=importlib``), so a test's folder is not on ``sys.path`` and what two test files
    share lives in a helper module on ``pytest.ini``'s ``pythonpath`` or in a ``conftest.py``."""
    problems = [f"{p.relative_to(root)}: no __init__.py in tests/" for p in files if p.name == "__init__.py"]
    tests = {p.name for p in files if p.name.startswith("test_")}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            problems += [f"{path.relative_to(root)} imports {n}, a test file" for n in names if n.split(".")[-1] + ".py" in tests]
    return sorted(problems)


def test_the_test_tree_keeps_its_rules():
    assert tree_problems(sorted(TESTS.rglob("*.py"))) == []


def unmirrored(root: Path = ROOT, unit: Path = TESTS / "unit") -> list[str]:
    """Modules of ``runner/`` without their ``tests/unit/<package>/test_<module>.py``."""
    return sorted(str(m.relative_to(root.parent)) for m in root.rglob("*.py")
                  if m.name not in ("__init__.py", "__main__.py")
                  and not (unit / m.parent.relative_to(root) / f"test_{m.name}").is_file())


def test_every_module_has_its_mirrored_unit_test_file():
    assert unmirrored() == []


def test_the_mirror_check_finds_a_module_without_its_test(tmp_path):
    for rel in ("runner/a/b.py", "runner/a/__init__.py", "runner/c.py", "tests/unit/a/test_b.py", "tests/unit/test_d.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert unmirrored(tmp_path / "runner", tmp_path / "tests" / "unit") == ["runner/c.py"]


def test_pytest_imports_test_files_by_path():
    # Mirrored names repeat across folders (tests/unit/engines/docker/test_verbs.py, tests/unit/engines/slurm/test_verbs.py):
    # only importlib mode imports both.
    assert "--import-mode=importlib" in (TESTS.parent / "pytest.ini").read_text().split("addopts", 1)[1].splitlines()[0]


def test_the_tree_check_finds_an_init_and_an_imported_test(tmp_path):
    for rel, text in {"a/test_x.py": "", "b/test_x.py": "", "b/__init__.py": "", "a/test_z.py": "import test_x\n",
                      "c/test_y.py": "from test_x import f\n", "c/helpers.py": "", "c/test_w.py": "import helpers\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert tree_problems(sorted(tmp_path.rglob("*.py")), tmp_path) == [
        "a/test_z.py imports test_x, a test file", "b/__init__.py: no __init__.py in tests/",
        "c/test_y.py imports test_x, a test file"]  # a shared basename (a/test_x.py, b/test_x.py) is fine


def unguarded_skips(files: list[Path], root: Path = TESTS) -> list[str]:
    """An integration test's skip that does not fail under CI: a ``skipif``/``importorskip``, or a
    ``pytest.skip`` in a function that never calls ``pytest.fail`` (``engine_missing`` does both)."""
    found = []
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("skipif", "importorskip"):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.attr}")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                called = {c.func.attr for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)}
                if "skip" in called and "fail" not in called:
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {node.name} skips, and never fails under CI")
    return sorted(found)


def test_an_integration_test_whose_engine_is_missing_fails_under_ci():
    files = sorted((TESTS / "integration").rglob("*.py")) + [TESTS / "engine_fixtures.py", TESTS / "conftest.py"]
    assert unguarded_skips(files) == []


def test_the_skip_check_finds_a_skip_that_would_pass_ci(tmp_path):
    (tmp_path / "test_a.py").write_text("import pytest\n@pytest.mark.skipif(True, reason='x')\ndef test_a():\n    pass\n"
                                        "def test_b():\n    pytest.skip('no engine')\n")
    assert unguarded_skips([tmp_path / "test_a.py"], tmp_path) == ["test_a.py:2: skipif", "test_a.py:5: test_b skips, and never fails under CI"]


@pytest.mark.parametrize("ci, outcome", [("true", pytest.fail.Exception), ("", pytest.skip.Exception)])
def test_a_missing_engine_fails_under_ci_and_skips_elsewhere(monkeypatch, ci, outcome):
    from engine_fixtures import engine_missing

    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome):
        engine_missing("a toy engine")


_OWN_SERVERS = {"loopback_servers.py", "pty_session.py", "engine_fixtures.py"}


def own_servers_and_terminals(files: list[Path], root: Path = TESTS) -> list[str]:
    """A test that stands up a server (a listening socket, an ``http.server``, ``mlflow server``) or
    drives a terminal (``pty``, ``os.openpty``) itself instead of through the shared helper."""
    found = []
    for path in files:
        if path.relative_to(root).as_posix() in _OWN_SERVERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            what = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "listen" and all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in node.args):
                    what = "a listening socket"
                elif node.func.attr in ("openpty", "forkpty"):
                    what = "a terminal"
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(n.split(".")[0] in ("pty", "socketserver") or n == "http.server" for n in names):
                    what = f"import {', '.join(names)}"
            elif isinstance(node, ast.List) and tuple(getattr(e, "value", None) for e in node.elts[:2]) == ("mlflow", "server"):
                what = "an mlflow server"
            if what:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {what}")
    return sorted(found)


def test_every_server_and_terminal_of_a_test_comes_from_the_shared_helpers():
    """``loopback_servers`` stands up every server, ``engine_fixtures.start_mlflow_server`` every MLflow
    server, ``pty_session.PtySession`` drives every terminal."""
    assert own_servers_and_terminals(sorted(TESTS.rglob("*.py"))) == []


def test_the_server_check_finds_a_test_of_its_own(tmp_path):
    (tmp_path / "test_a.py").write_text("import pty\nimport http.server\ndef test_a(sock):\n    sock.listen(1)\n"
                                        "    argv = ['mlflow', 'server', '--port', '0']\n")
    assert own_servers_and_terminals([tmp_path / "test_a.py"], tmp_path) == [
        "test_a.py:1: import pty", "test_a.py:2: import http.server", "test_a.py:4: a listening socket", "test_a.py:5: an mlflow server"]


# ------------------------------------------------------------------ docs/cli.md's table of exit codes

CLI_DOC = REPO / "docs" / "cli.md"


def exit_table_against_errors(doc: str) -> list[str]:
    """Each row of cli.md's table of failures whose error class carries its code: the code the
    class has, against the row's (``Interrupted`` carries the signal's, 130 or 143, per instance)."""
    import runner.errors as errors

    section = doc.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    wrong, seen = [], 0
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 4 or not cells[1][:1].isdigit():
            continue
        codes = {int(c) for c in re.findall(r"\d+", cells[1])}
        for name in re.findall(r"`(\w+)`", cells[2]):
            seen += 1
            code = getattr(errors, name).exit_code if name != "Interrupted" else None
            if code is not None and code not in codes:
                wrong.append(f"{name}: the table says {sorted(codes)}, the class exits {code}")
    return wrong if seen else ["no error class read from the table"]


def test_the_exit_codes_cli_md_gives_each_error_class_are_the_classes():
    assert exit_table_against_errors(CLI_DOC.read_text()) == []


def test_the_exit_table_check_finds_a_wrong_code():
    doc = CLI_DOC.read_text().replace("| 3 | `RuntimeFailure` |", "| 4 | `RuntimeFailure` |")
    assert exit_table_against_errors(doc) == ["RuntimeFailure: the table says [4], the class exits 3"]
