"""``completion bash|zsh|fish``: scripts load, and complete every command and flag of the parser."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from runner.cli import build_parser
from runner.cli.completion import script, spec_from_parser

SPEC = spec_from_parser(build_parser())
CLI = f"{sys.executable} -m runner"


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory):
    """The script as the CLI prints it, generated once (a Python start-up per TAB test is slow)."""
    result = subprocess.run([sys.executable, "-m", "runner", "completion", "bash"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    path = tmp_path_factory.mktemp("completion") / "primus-runner.bash"
    path.write_text(result.stdout)
    return path


def bash(body: str, source: str = f"<({CLI} completion bash)") -> str:
    """Run bash with the generated script sourced exactly as users do."""
    prog = f"source {source}\n" + body
    result = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def complete_bash(line: str, source: str) -> list[str]:
    """Drive the completion function like bash does on TAB at the end of ``line``."""
    words = line.split(" ")
    quoted = " ".join(f"'{w}'" for w in words)
    return bash(f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _primus_runner; printf '%s\\n' \"${{COMPREPLY[@]}}\"", source).split()


def test_bash_script_loads_and_registers():
    assert bash("complete -p primus-runner").strip() == "complete -F _primus_runner primus-runner"


def test_console_script_prints_it():
    exe = shutil.which("primus-runner")
    assert exe, "pip install -e . installs the primus-runner console script"
    result = subprocess.run([exe, "completion", "bash"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "complete -F _primus_runner primus-runner" in result.stdout


@pytest.mark.parametrize(
    "line, expected",
    [
        ("primus-runner su", ["submit"]),
        ("primus-runner up --im", ["--image"]),
        ("primus-runner up --gpu ", ["cuda", "none", "rocm"]),
        ("primus-runner completion ", ["bash", "fish", "zsh"]),
        ("primus-runner --config x.yaml ch", ["check"]),
        ("primus-runner --js", ["--json"]),
        ("primus-runner submit --nodes 2 --wa", ["--wait"]),
        ("primus-runner build --flavor ", ["cuda", "rocm"]),
        ("primus-runner no", []),  # the hidden node-agent is not offered
    ],
)
def test_bash_completes(line, expected, bash_script):
    assert sorted(complete_bash(line, str(bash_script))) == expected


def test_bash_completes_every_command_and_flag(bash_script):
    """One bash process checks every command name and every option of every command."""
    checks = [("", c.name[:2], c.name) for c in SPEC.commands]
    checks += [("", o, o) for opt in SPEC.globals for o in opt.strings if o.startswith("--")]
    checks += [(c.name, o, o) for c in SPEC.commands for opt in c.options for o in opt.strings if o.startswith("--")]
    assert len(checks) > 60
    body = []
    for cmd, cur, want in checks:
        words = ["primus-runner"] + ([cmd] if cmd else []) + [cur]
        body.append(
            f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; _primus_runner; "
            f"printf '%s\\n' \"${{COMPREPLY[@]}}\" | grep -qx -- '{want}' || echo 'MISSING {cmd} {want}'"
        )
    missing = bash("\n".join(body), str(bash_script))
    assert missing == "", missing


def test_value_flags_do_not_swallow_the_command(bash_script):
    # --env-file takes a value: "up" after it is that value, so the command is still to come.
    assert complete_bash("primus-runner --env-file up ch", str(bash_script)) == ["check"]


def parsed_script(shell: str) -> str:
    """The completion script for ``shell``, which that shell parses (``SHELL -n``). zsh and fish come from
    .ci/setup-engines.sh: missing under CI is a failure, elsewhere a skip."""
    if shutil.which(shell) is None:
        from engine_fixtures import engine_missing

        engine_missing(shell, f"apt-get install {shell}")
    text = script(shell, build_parser())
    assert subprocess.run([shell, "-n"], input=text, text=True, capture_output=True).returncode == 0
    return text


def test_zsh_script_parses_and_registers():
    text = parsed_script("zsh")
    result = subprocess.run(
        ["zsh", "-f", "-c", f"autoload -U compinit; compinit -u -D; source <({CLI} completion zsh); print -r -- $_comps[primus-runner]"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.stdout.strip() == "_primus_runner", result.stderr
    for command in SPEC.commands:
        assert f"'{command.name}:" in text


@pytest.mark.parametrize(
    "line, expected",
    [("primus-runner su", {"submit"}), ("primus-runner up --im", {"--image"}), ("primus-runner up --gpu ", {"rocm", "cuda", "none"})],
)
def test_fish_completes(line, expected):
    parsed_script("fish")
    result = subprocess.run(
        ["fish", "--no-config", "-c", f"{CLI} completion fish | source; complete -C '{line}'"],
        capture_output=True, text=True, timeout=60,
    )
    got = {row.split("\t")[0] for row in result.stdout.splitlines()}
    assert got == expected, result.stderr
