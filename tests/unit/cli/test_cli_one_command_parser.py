"""A run builds only its command's parser (``build_parser(only=...)``): every command line parses to
the same namespace as with the whole tree, and a usage error is reported as the whole tree reports it."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from runner import cli
from runner.cli import build_parser
from runner.cli.suggest import visible_commands

# Each command's own example (its --help epilog), and lines with the global options around the command.
EXAMPLES = [
    "plan --gpu none -- python train.py", "--json plan -e HF_TOKEN -v /d:/d --gpus 0-3,5 -- true",
    "up -it --rm --pull always --label a=b --platform linux/arm64 -- sh", "--config c.yaml up -d --name x -- true",
    "check --online --engine docker --timeout 3 --gpu none", "shell --gpu none --dry-run",
    "ps --json --all-users", "logs 1234 -f --node 1 --tail 5", "exec primus-1 -- nvidia-smi", "down --all --dry-run",
    "runs -n 5", "runs show 2026", "runs gc --older-than 30d --dry-run", "runs list --state failed --json",
    "build --flavor rocm --tag my/primus:dev --build-arg A=B", "submit -N 2 -t 4:00:00 --wait --exclusive -- python t.py",
    "status 1234 --json", "cancel 1234 --dry-run", "audit primus-1 ./logs", "completion bash", "demo",
    "trust --show", "node-agent plan.json", "node-agent --cleanup 42", "__complete containers",
    "--no-color --verbose -q plan --config late.yaml -- true", "--env-file=.env --trust-project plan -- true",
    "slurm srun -N 2 -- train", "slurm sbatch -N 8 -o train.log -- train", "slurm --help", "--dry-run --debug direct --help",
]


def _namespace(parser: argparse.ArgumentParser, argv: list[str]) -> dict | str:
    """The parsed namespace, or what argparse printed when it exited (help, an error)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        try:
            return vars(parser.parse_args(argv))
        except SystemExit as exit_:
            return f"exit {exit_.code}: {printed.getvalue()}"


@pytest.mark.parametrize("line", EXAMPLES)
def test_one_command_parses_as_the_whole_tree(line):
    argv = line.split()
    command = cli._command_in(argv)[1]
    whole = _namespace(build_parser(), argv)
    one = _namespace(build_parser(only=command), argv)
    assert one == whole
    assert isinstance(whole, dict) or whole.startswith("exit 0"), whole  # each example is a valid line


def test_the_tree_of_one_command_holds_that_command_alone():
    whole = build_parser()
    assert len(visible_commands(whole)) >= 20
    one = build_parser(only="plan")
    assert list(next(a for a in one._actions if isinstance(a, argparse._SubParsersAction)).choices) == ["plan"]


def _said(argv: list[str], capsys) -> tuple[object, str]:
    with pytest.raises(SystemExit) as raised:
        cli.main(argv)
    return raised.value.code, capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["chek"],  # not a command: the did-you-mean names the closest of all of them
    ["plan", "--detach", "--", "true"],  # an option of another command
    ["plan", "--gpu", "rocmm"],
    ["runs", "gc"],  # a required option missing, in a nested command
    ["status"],
    ["--config"],
    ["direct", "--env"],  # the launcher's own parse refuses these (parser.error after argparse's parse)
    ["slurm", "srun", "-N", "2"],
])
def test_a_usage_error_reads_as_the_whole_tree_says_it(argv, capsys, monkeypatch, tmp_path):
    """``main`` parses with the command's tree first; an error is said as the whole tree says it, word for word."""
    monkeypatch.chdir(tmp_path)
    one = _said(argv, capsys)
    whole_tree = cli.build_parser
    monkeypatch.setattr(cli, "build_parser", lambda only=None: whole_tree())
    whole = _said(argv, capsys)
    assert one == whole and one[0] == 2 and one[1].startswith("usage: "), one
